import CX11
import Glibc
import OpenCoreVideo

/// One MIT-SHM segment the X server writes a screen grab into (`XShmGetImage`), and the `XImage` that describes it.
///
/// The segment is marked for removal (`IPC_RMID`) as soon as the server has attached it, so it cannot outlive the
/// process; it is unmapped (`shmdt`) when the object goes, which is when the last pixel buffer over it is released.
/// The server's attachment ends when the capture thread closes its connection.
///
/// Threading: the capture thread fills it; any thread may read the pixels of a frame it was handed, and release it.
final class X11SharedImage: @unchecked Sendable {
    /// The `XImage *` XShmGetImage fills (its `data` is the segment).
    let image: UnsafeMutablePointer<XImage>
    /// The segment's description, which the XImage points to (`obdata`) and so lives as long as it.
    private let segment: UnsafeMutablePointer<XShmSegmentInfo>
    let width: Int
    let height: Int
    let bytesPerRow: Int
    var baseAddress: UnsafeMutableRawPointer { UnsafeMutableRawPointer(segment.pointee.shmaddr) }

    /// Why a segment could not be made, with the step that failed.
    struct Failure: Error {
        var message: String
    }

    /// A `width`×`height` segment in the screen's default visual, attached to the server on `connection`.
    init(connection: X11Connection, width: Int32, height: Int32) throws(Failure) {
        let display = connection.display
        let visual = XDefaultVisual(display, connection.screen)
        let info = UnsafeMutablePointer<XShmSegmentInfo>.allocate(capacity: 1)
        info.initialize(to: XShmSegmentInfo())
        guard
            let image = XShmCreateImage(
                display, visual, UInt32(connection.depth), ZPixmap, nil, info, UInt32(width), UInt32(height))
        else {
            info.deallocate()
            throw Failure(message: "XShmCreateImage failed for \(width)x\(height) at depth \(connection.depth)")
        }
        // The layout BGRA means: 32 bits per pixel, red in bits 16–23, blue in 0–7, least significant byte first.
        let layout = image.pointee
        guard layout.bits_per_pixel == 32, layout.red_mask == 0xFF_0000, layout.green_mask == 0xFF00,
            layout.blue_mask == 0xFF, layout.byte_order == LSBFirst
        else {
            CX11_destroyImage(image)
            info.deallocate()
            throw Failure(
                message: "the X screen's pixels are \(layout.bits_per_pixel)-bit at depth \(connection.depth), not"
                    + " 32-bit BGRX; run the server at depth 24 (Xvfb: -screen 0 WxHx24)")
        }
        let size = Int(layout.bytes_per_line) * Int(height)
        let identifier = shmget(CX11_ipcPrivate(), size, IPC_CREAT | 0o600)
        guard identifier >= 0 else {
            CX11_destroyImage(image)
            info.deallocate()
            throw Failure(message: "shmget of \(size) bytes failed (errno \(errno)); raise kernel.shmmax or shmall")
        }
        guard let address = shmat(identifier, nil, 0), address != UnsafeMutableRawPointer(bitPattern: -1) else {
            shmctl(identifier, IPC_RMID, nil)
            CX11_destroyImage(image)
            info.deallocate()
            throw Failure(message: "shmat failed (errno \(errno))")
        }
        info.pointee.shmid = identifier
        info.pointee.shmaddr = address.assumingMemoryBound(to: CChar.self)
        info.pointee.readOnly = 0
        image.pointee.data = info.pointee.shmaddr
        _ = CX11_takeLastError()
        let attached = XShmAttach(display, info) != 0
        XSync(display, 0)
        let error = CX11_takeLastError()
        // Attached or not, the segment goes when its last user detaches.
        shmctl(identifier, IPC_RMID, nil)
        guard attached, error == 0 else {
            image.pointee.data = nil
            CX11_destroyImage(image)
            shmdt(address)
            info.deallocate()
            throw Failure(
                message: "the X server could not attach shared memory (error \(error)): it must run on this machine"
                    + " and in this IPC namespace")
        }
        self.image = image
        self.segment = info
        self.width = Int(width)
        self.height = Int(height)
        self.bytesPerRow = Int(layout.bytes_per_line)
    }

    deinit {
        let address = segment.pointee.shmaddr
        // The data is the segment, not Xlib's heap: XDestroyImage must not free it.
        image.pointee.data = nil
        CX11_destroyImage(image)
        if let address { shmdt(address) }
        segment.deallocate()
    }

    /// Grabs the screen at (`x`, `y`) of `root` into the segment; false when the server refused (a BadMatch when the
    /// area leaves the screen, or a lost connection).
    func grab(connection: X11Connection, x: Int32, y: Int32) -> Bool {
        XShmGetImage(connection.display, connection.root, image, x, y, CX11_allPlanes()) != 0
    }

    /// A pixel buffer over the segment that keeps it mapped while anyone holds the buffer.
    func wrapPixelBuffer() throws(CVPixelBufferCreationError) -> CVPixelBuffer {
        try CVPixelBuffer(
            width: width, height: height, pixelFormatType: kCVPixelFormatType_32BGRA,
            planes: [WrappedPlane(baseAddress: baseAddress, bytesPerRow: bytesPerRow)], release: { [self] in _ = self })
    }
}
