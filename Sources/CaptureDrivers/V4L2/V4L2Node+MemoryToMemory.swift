import CLinuxMedia
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The calls a memory-to-memory codec node needs beyond a capture node's: queueing a filled OUTPUT buffer, and the
/// encoder commands (V4L2's stateful encoder interface, Documentation/userspace-api/media/v4l/dev-encoder.rst).
extension V4L2Node {
    /// VIDIOC_QBUF of OUTPUT buffer `index`, filled by us: `bytesUsed` bytes in each memory plane, stamped with
    /// `timestamp` (the driver copies it to the packet it makes from the picture, which is how packets are matched
    /// to pictures).
    package func queueOutput(_ index: Int, type: V4L2BufferType, bytesUsed: [Int], timestamp: timeval) throws(Errno) {
        precondition(type.isOutput, "queueOutput is for an OUTPUT queue")
        guard type.isMultiplanar else {
            var buffer = Self.emptyBuffer(index: index, type: type)
            buffer.bytesused = UInt32(bytesUsed.first ?? 0)
            buffer.timestamp = timestamp
            buffer.field = V4L2_FIELD_NONE.rawValue
            try ioctl(.queueBuffer, &buffer)
            return
        }
        try withPlanes(bytesUsed.count) { planes throws(Errno) in
            for (plane, used) in bytesUsed.enumerated() { planes[plane].bytesused = UInt32(used) }
            var buffer = Self.emptyBuffer(index: index, type: type, planes: planes)
            buffer.timestamp = timestamp
            buffer.field = V4L2_FIELD_NONE.rawValue
            try ioctl(.queueBuffer, &buffer)
        }
    }

    /// VIDIOC_ENCODER_CMD with `V4L2_ENC_CMD_STOP`: the encoder finishes the pictures it has and marks the last
    /// packet with `V4L2_BUF_FLAG_LAST`.
    package func stopEncoding() throws(Errno) {
        var command = v4l2_encoder_cmd()
        command.cmd = UInt32(V4L2_ENC_CMD_STOP)
        try ioctl(.encoderCommand, &command)
    }

    /// VIDIOC_ENCODER_CMD with `V4L2_ENC_CMD_START`: encoding resumes after a drain.
    package func startEncoding() throws(Errno) {
        var command = v4l2_encoder_cmd()
        command.cmd = UInt32(V4L2_ENC_CMD_START)
        try ioctl(.encoderCommand, &command)
    }

    /// Waits up to `milliseconds` for the node to have a buffer to dequeue (poll(2) for POLLIN on CAPTURE, POLLOUT
    /// on OUTPUT); whether it has. An error condition (POLLERR: a queue not streaming) counts as ready, so the
    /// DQBUF that follows reports it.
    package func waitUntilReadable(milliseconds: Int32) throws(Errno) -> Bool {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        return try system.poll(&descriptors, timeout: milliseconds) > 0
    }
}

extension V4L2Capability {
    /// The OUTPUT and CAPTURE queues of a memory-to-memory node (`V4L2_CAP_VIDEO_M2M`, or `…_M2M_MPLANE`), the
    /// single-planar pair where the node has both; nil for any other node.
    package var memoryToMemoryQueues: (output: V4L2BufferType, capture: V4L2BufferType)? {
        guard deviceCapabilities & UInt32(V4L2_CAP_STREAMING) != 0 else { return nil }
        if deviceCapabilities & UInt32(V4L2_CAP_VIDEO_M2M) != 0 { return (.videoOutput, .videoCapture) }
        if deviceCapabilities & UInt32(V4L2_CAP_VIDEO_M2M_MPLANE) != 0 {
            return (.videoOutputMultiplanar, .videoCaptureMultiplanar)
        }
        return nil
    }
}
