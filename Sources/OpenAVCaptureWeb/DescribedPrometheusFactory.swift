import CoreMetrics
import Prometheus

/// A swift-metrics backend writing into a Prometheus registry with a `# HELP` line for every metric.
///
/// swift-prometheus's own `PrometheusMetricsFactory` registers everything without help text, which `promtool check
/// metrics` reports as a lint problem; this one looks each label up in `help` and registers it with that text
/// (labels without one get a generic text). Timers and histograms, which the capture metrics do not use, go to
/// swift-prometheus's factory unchanged.
///
/// Threading: a value over a thread-safe registry; `Sendable`.
struct DescribedPrometheusFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let help: [String: String]

    private var plain: PrometheusMetricsFactory { PrometheusMetricsFactory(registry: registry) }

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: help[label] ?? "OpenAVCapture's \(label).")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard !aggregate else { return plain.makeRecorder(label: label, dimensions: dimensions, aggregate: true) }
        return registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        plain.makeTimer(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) { plain.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        plain.destroyFloatingPointCounter(handler)
    }
    func destroyRecorder(_ handler: any RecorderHandler) { plain.destroyRecorder(handler) }
    func destroyMeter(_ handler: any MeterHandler) { plain.destroyMeter(handler) }
    func destroyTimer(_ handler: any TimerHandler) { plain.destroyTimer(handler) }
}
