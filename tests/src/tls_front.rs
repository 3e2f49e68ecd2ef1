//! An HTTPS front for an emulator: TLS ends here, bytes pass to the plain-HTTP upstream. The
//! functions compile in one HTTPS client of their own choosing (hyper 1 + rustls on ring), and a
//! client whose TLS half is missing compiles and fails only at its first request; moto and
//! LocalStack speak plain HTTP, so only this front makes the functions do a real handshake.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

pub struct TlsFront {
    /// `https://127.0.0.1:{port}`, for `AWS_ENDPOINT_URL`.
    pub endpoint: String,
    /// The front's self-signed certificate in PEM, for `SSL_CERT_FILE`.
    pub ca_file: PathBuf,
    server: tokio::task::JoinHandle<()>,
}

impl TlsFront {
    /// Listens on a free loopback port with a new certificate for 127.0.0.1 and localhost, and
    /// relays each connection to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .expect("upstream is http://ip:port");
        let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("generate a certificate");
        let dir = crate::workspace_root().join("target/e2e-logs");
        std::fs::create_dir_all(&dir).expect("create the certificate's folder");
        let ca_file = dir.join(format!("tls-front-{}.pem", uuid::Uuid::new_v4()));
        std::fs::write(&ca_file, certified.cert.pem()).expect("write the certificate");

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der()));
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(certified.cert.der().to_vec())], key)
            .expect("server certificate");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let server = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that rejects the certificate ends here, as it should.
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let Ok(mut plain) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self {
            endpoint: format!("https://{addr}"),
            ca_file,
            server,
        }
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.server.abort();
        let _ = std::fs::remove_file(&self.ca_file);
    }
}
