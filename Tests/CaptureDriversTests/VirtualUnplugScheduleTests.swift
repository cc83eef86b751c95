import CaptureDrivers
import Testing

@Suite("OPENAV_VIRTUAL_UNPLUG, the planned unplug of a virtual device")
struct VirtualUnplugScheduleTests {
    @Test("UNIQUEID:AFTER:FOR, the unique ID keeping its own colons")
    func parses() {
        #expect(
            VirtualUnplugSchedule.parse("virtual:back-camera:1.5:1")
                == VirtualUnplugSchedule.Plan(uniqueID: "virtual:back-camera", after: 1.5, outage: 1))
        #expect(
            VirtualUnplugSchedule.parse("virtual:microphone:0:0.25")
                == VirtualUnplugSchedule.Plan(uniqueID: "virtual:microphone", after: 0, outage: 0.25))
    }

    @Test("Unset or malformed plans nothing")
    func rejects() {
        for text in [nil, "", "virtual:back-camera", "virtual:back-camera:x:1", "cam:-1:1", "cam:1:inf"] {
            #expect(VirtualUnplugSchedule.parse(text) == nil, "\(String(describing: text))")
        }
    }
}
