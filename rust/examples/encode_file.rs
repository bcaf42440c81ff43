//! Encodes a JSON list of documents with a tokenizer.json, for profiling (`perf record`) the core
//! without Python: `cargo run --release --example encode_file -- tokenizer.json corpus.json [ids|offsets]`
//! (`ROUNDS=n`, default 3; `FRESH=1` loads the tokenizer again before each round).
use fastprep::tokenize::{EncodeOptions, Input, Offsets, Tokenizer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = std::fs::read_to_string(&args[1]).unwrap();
    let mut tok = Tokenizer::from_json_str(&json).unwrap();
    // FRESH=1: every round on a freshly loaded tokenizer (empty caches), to time first passes.
    let fresh = std::env::var("FRESH").is_ok_and(|f| f == "1");
    let docs: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&args[2]).unwrap()).unwrap();
    let ids_only = args.get(3).is_some_and(|a| a == "ids");
    let offsets = if args.get(3).is_some_and(|a| a == "offsets") {
        Offsets::Char
    } else {
        Offsets::None
    };
    let opts = EncodeOptions {
        add_special_tokens: false,
        offsets,
        truncation: None,
        padding: None,
    };
    let bytes: usize = docs.iter().map(String::len).sum();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    println!("loaded: RSS {:.1} MiB", rss_mib());
    for round in 0..rounds {
        if fresh && round > 0 {
            tok = Tokenizer::from_json_str(&json).unwrap();
        }
        let t0 = std::time::Instant::now();
        let mut n = 0;
        for d in &docs {
            n += if ids_only {
                tok.encode_ids(d, false, None).unwrap().unwrap().len()
            } else {
                tok.encode(&Input::Text(d), None, &opts).unwrap().len()
            };
        }
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "round {round}: {n} tokens, {:.1} MB/s, RSS {:.1} MiB",
            bytes as f64 / dt / 1e6,
            rss_mib()
        );
    }
}

/// Resident memory (Linux; 0 elsewhere).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |pages| pages * 4096.0 / f64::from(1 << 20))
}
