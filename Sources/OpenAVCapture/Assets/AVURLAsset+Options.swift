/// The `AVURLAsset(url:options:)` key asking for exact duration and timing rather than an estimate
/// (`NSNumber(value: true)`). Apple reads a file's whole sample table when it is true; our assets always read the
/// container's sample tables through libavformat, so ``AVAsset/duration`` and the tracks' time ranges are exact with
/// or without it (`AVURLAssetTests`).
public let AVURLAssetPreferPreciseDurationAndTimingKey = "AVURLAssetPreferPreciseDurationAndTimingKey"
