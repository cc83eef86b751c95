import CALSA
import Testing

/// The shim links against libasound and its malloc-form parameter helpers work.
@Suite struct CALSALinkTests {
    @Test func libraryVersion() {
        let version = String(cString: snd_asoundlib_version())
        #expect(version.hasPrefix("1."))
    }

    @Test func parameterContainersAllocateAndFree() throws {
        let hardware = try #require(CALSA_hwParamsCreate())
        defer { snd_pcm_hw_params_free(hardware) }
        let software = try #require(CALSA_swParamsCreate())
        defer { snd_pcm_sw_params_free(software) }
        let status = try #require(CALSA_statusCreate())
        defer { snd_pcm_status_free(status) }
        #expect(snd_pcm_hw_params_sizeof() > 0)
    }

    @Test func openingANonexistentDeviceIsAnErrorValue() {
        var pcm: OpaquePointer?
        let result = snd_pcm_open(&pcm, "hw:99,0", SND_PCM_STREAM_CAPTURE, CALSA_PCM_NONBLOCK())
        #expect(result < 0)
        #expect(pcm == nil)
        #expect(!String(cString: snd_strerror(result)).isEmpty)
    }
}
