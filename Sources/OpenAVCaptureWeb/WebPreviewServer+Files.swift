// The files the web camera app serves by name: photos and movies of the media directory, and the live HLS stream's
// playlist and segments, each refused before the file system is asked unless its name is plain.

import Foundation
import Hummingbird
import NIOCore

extension WebPreviewServer {
    static let mediaTypes = ["jpg": "image/jpeg", "jpeg": "image/jpeg", "heic": "image/heic", "mov": "video/quicktime"]
    /// What an HLS stream's directory holds: the playlist, CMAF segments and their initialization segment.
    static let liveTypes = [
        "m3u8": "application/vnd.apple.mpegurl", "m4s": "video/iso.segment", "mp4": "video/mp4", "ts": "video/mp2t",
    ]
    /// The playlist's name in the live directory (the page links to it).
    public static let livePlaylistName = "stream.m3u8"

    /// A plain file name of the media directory: letters, digits, '.', '-' and '_', not starting with '.', with a
    /// media extension. Anything else (a '/', '..', an encoded separator, a hidden file) is refused before the
    /// file system is asked.
    static func isPlainMediaName(_ name: String) -> Bool { isPlainName(name, types: mediaTypes) }

    /// A plain name (as ``isPlainMediaName(_:)``) with one of `types`' extensions.
    static func isPlainName(_ name: String, types: [String: String]) -> Bool {
        guard (1...200).contains(name.utf8.count), !name.hasPrefix("."), !name.contains("..") else { return false }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        guard name.allSatisfy(allowed.contains) else { return false }
        return types[(name as NSString).pathExtension.lowercased()] != nil
    }

    func mediaNames() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: configuration.mediaDirectory.path)) ?? []
        return names.filter(Self.isPlainMediaName).sorted()
    }

    func mediaFile(named name: String) throws -> Response {
        guard Self.isPlainMediaName(name) else { throw HTTPError(.badRequest, message: "not a media file name") }
        let (data, type) = try Self.contents(of: name, in: configuration.mediaDirectory, types: Self.mediaTypes)
        return Response(status: .ok, headers: [.contentType: type], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// A file of the live stream. The playlist changes with every segment, so nothing is cached; with a token,
    /// its segment and map URIs carry the token, since a player asks for them as the playlist names them.
    func liveFile(named name: String, in directory: URL) throws -> Response {
        guard Self.isPlainName(name, types: Self.liveTypes) else {
            throw HTTPError(.badRequest, message: "not a file of the live stream")
        }
        var (data, type) = try Self.contents(of: name, in: directory, types: Self.liveTypes)
        if name.lowercased().hasSuffix(".m3u8"), let token = configuration.token, !token.isEmpty {
            data = Data(Self.playlist(String(decoding: data, as: UTF8.self), carrying: token).utf8)
        }
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Reads a plain-named file of `directory`, refusing one whose resolved path leaves it (a symbolic link).
    private static func contents(
        of name: String, in directory: URL, types: [String: String]
    ) throws
        -> (Data, String)
    {
        let directory = directory.resolvingSymlinksInPath().standardizedFileURL
        let url = directory.appendingPathComponent(name).resolvingSymlinksInPath().standardizedFileURL
        guard url.deletingLastPathComponent().path == directory.path,
            let data = FileManager.default.contents(atPath: url.path)
        else { throw HTTPError(.notFound, message: "no such file") }
        return (data, types[url.pathExtension.lowercased()] ?? "application/octet-stream")
    }

    /// An HLS playlist whose URIs (the segment lines and `URI="…"` attributes, e.g. `#EXT-X-MAP`) ask with `token`.
    static func playlist(_ text: String, carrying token: String) -> String {
        let query = "token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        func withToken(_ uri: Substring) -> String { uri + (uri.contains("?") ? "&" : "?") + query }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { return String(line) }
            guard trimmed.hasPrefix("#") else { return withToken(Substring(trimmed)) }
            guard let start = line.range(of: "URI=\""), let end = line[start.upperBound...].firstIndex(of: "\"")
            else { return String(line) }
            return line[..<start.upperBound] + withToken(line[start.upperBound..<end]) + line[end...]
        }.joined(separator: "\n")
    }
}
