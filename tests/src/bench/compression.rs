//! Which codec stores bodies (issue 45, item 4): pure-Rust codecs measured on JSON bodies of
//! 1–64 KB (`bodies::json_body`) for the write units a body bills, as given and compressed, and
//! the CPU each costs. `make bench` section `compression`; docs/cost.md "Compressed bodies".

use std::time::Instant;

use serde::Serialize;

use super::bodies::json_body;
use super::cost::write_units;

/// Body sizes measured, in bytes.
pub const COMPRESSION_SIZES: [usize; 7] = [1024, 2048, 4096, 8192, 16_384, 32_768, 65_536];

#[derive(Debug, Clone, Serialize)]
pub struct CodecRow {
    pub codec: &'static str,
    pub body_bytes: usize,
    /// Mean over the bodies measured.
    pub compressed_bytes: f64,
    pub ratio: f64,
    /// Write units of the body alone (1 per KB), as given and compressed, mean over the bodies.
    pub write_units_plain: f64,
    pub write_units_compressed: f64,
    /// Median over the runs, one body each.
    pub compress_us: f64,
    pub decompress_us: f64,
}

type Codec = (&'static str, fn(&[u8]) -> Vec<u8>, fn(&[u8]) -> Vec<u8>);

fn inflate(z: &[u8]) -> Vec<u8> {
    miniz_oxide::inflate::decompress_to_vec(z).expect("inflate")
}

fn unzstd(z: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut source = z;
    ruzstd::decoding::StreamingDecoder::new(&mut source)
        .expect("zstd frame")
        .read_to_end(&mut out)
        .expect("zstd");
    out
}

/// The candidates: deflate (RFC 1951, `miniz_oxide`) at levels 1, 6 and 9, LZ4 (`lz4_flex`
/// block) and zstd (`ruzstd`, whose only level is its fastest).
pub const CODECS: [Codec; 5] = [
    ("deflate-1", |b| miniz_oxide::deflate::compress_to_vec(b, 1), inflate),
    ("deflate-6", |b| miniz_oxide::deflate::compress_to_vec(b, 6), inflate),
    ("deflate-9", |b| miniz_oxide::deflate::compress_to_vec(b, 9), inflate),
    ("lz4", lz4_flex::compress_prepend_size, |z| {
        lz4_flex::decompress_size_prepended(z).expect("lz4")
    }),
    (
        "zstd-fastest",
        |b| ruzstd::encoding::compress_to_vec(b, ruzstd::encoding::CompressionLevel::Fastest),
        unzstd,
    ),
];

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Each codec on `bodies` JSON bodies of each size; every body must come back byte for byte.
pub fn compression(bodies: usize) -> Vec<CodecRow> {
    let mut rows = Vec::new();
    for size in COMPRESSION_SIZES {
        let samples: Vec<String> = (0..bodies.max(1)).map(|i| json_body(i, size)).collect();
        for (codec, compress, decompress) in CODECS {
            let (mut bytes, mut units, mut c_us, mut d_us) = (0usize, 0.0, Vec::new(), Vec::new());
            for body in &samples {
                let t = Instant::now();
                let z = compress(body.as_bytes());
                c_us.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                let back = decompress(&z);
                d_us.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(back, body.as_bytes(), "{codec} round trip of {size} bytes");
                bytes += z.len();
                units += write_units(z.len());
            }
            let n = samples.len() as f64;
            rows.push(CodecRow {
                codec,
                body_bytes: size,
                compressed_bytes: bytes as f64 / n,
                ratio: bytes as f64 / n / size as f64,
                write_units_plain: write_units(size),
                write_units_compressed: units / n,
                compress_us: median(c_us),
                decompress_us: median(d_us),
            });
        }
    }
    rows
}
