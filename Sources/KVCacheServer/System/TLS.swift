import CSSL
#if canImport(Glibc)
import Glibc
#endif

/// The outcome of a non-blocking TLS call.
enum TLSResult {
    case done(Int)
    case wantRead
    case wantWrite
    /// The peer closed the TLS session cleanly.
    case closed
    case failed(String)
}

/// The server's TLS settings as OpenSSL holds them: certificate, key, the
/// CAs that sign client certificates, and whether clients must present one.
/// The only file with SSL_CTX; TLSSession holds the SSL objects.
final class TLSContext {
    fileprivate let context: OpaquePointer

    enum ClientAuth: String { case yes, no, optional }

    /// - Throws: `ConfigError` with OpenSSL's reason when a file cannot be used.
    init(certificateFile: String, keyFile: String, caCertificateFile: String, clientAuth: ClientAuth) throws {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw ConfigError("TLS: \(tlsErrors())") }
        self.context = context
        _ = kv_SSL_CTX_set_min_proto_version(context, kv_TLS1_2_VERSION)
        _ = kv_SSL_CTX_set_mode(context, kv_SSL_MODE_ENABLE_PARTIAL_WRITE | kv_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
            | kv_SSL_MODE_RELEASE_BUFFERS)
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            throw ConfigError("TLS: can't load the certificate \(certificateFile): \(tlsErrors())")
        }
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw ConfigError("TLS: can't load the private key \(keyFile): \(tlsErrors())")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw ConfigError("TLS: the private key \(keyFile) does not match the certificate: \(tlsErrors())")
        }
        if !caCertificateFile.isEmpty {
            guard SSL_CTX_load_verify_locations(context, caCertificateFile, nil) == 1 else {
                throw ConfigError("TLS: can't load the CA certificate \(caCertificateFile): \(tlsErrors())")
            }
        }
        switch clientAuth {
        case .yes:
            guard !caCertificateFile.isEmpty else {
                throw ConfigError("TLS: tls-auth-clients yes needs tls-ca-cert-file to check client certificates")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        case .optional:
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        case .no:
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
    }

    deinit { SSL_CTX_free(context) }
}

/// One client's TLS session over a non-blocking socket.
final class TLSSession {
    private let ssl: OpaquePointer
    private(set) var handshakeDone = false

    init?(context: TLSContext, fd: Int32) {
        guard let ssl = SSL_new(context.context) else { return nil }
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
    }

    deinit { SSL_free(ssl) }

    private func classify(_ rc: Int32) -> TLSResult {
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .closed
        case SSL_ERROR_SYSCALL:
            let err = errno
            ERR_clear_error()
            if err == EINTR || err == EAGAIN { return .wantRead }
            return err == 0 ? .closed : .failed(String(cString: strerror(err)))
        default:
            return .failed(tlsErrors())
        }
    }

    /// Advances the handshake; `.done(0)` once it is complete.
    func handshake() -> TLSResult {
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            handshakeDone = true
            return .done(0)
        }
        return classify(rc)
    }

    /// Reads decrypted bytes.
    func read(_ buffer: UnsafeMutableRawBufferPointer) -> TLSResult {
        ERR_clear_error()
        let rc = SSL_read(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        return rc > 0 ? .done(Int(rc)) : classify(rc)
    }

    /// Writes bytes (a partial write is possible).
    func write(_ buffer: UnsafeRawBufferPointer) -> TLSResult {
        guard buffer.count > 0 else { return .done(0) }
        ERR_clear_error()
        let rc = SSL_write(ssl, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
        return rc > 0 ? .done(Int(rc)) : classify(rc)
    }

    /// Decrypted bytes OpenSSL holds that the socket will not signal again.
    var pending: Int { Int(SSL_pending(ssl)) }

    /// Sends close_notify, best effort (the socket is closed right after).
    func shutdown() {
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
    }
}

/// OpenSSL's queued error texts, oldest first.
func tlsErrors() -> String {
    var texts: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        texts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return texts.isEmpty ? "unknown TLS error" : texts.joined(separator: "; ")
}
