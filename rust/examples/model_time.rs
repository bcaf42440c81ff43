//! Times the model stage alone (pieces pre-split with the cl100k splitter) over a JSON list of
//! documents: `model_time tokenizer.json corpus.json`.
use fastprep::tokenize::bpe::with_scratch;
use fastprep::tokenize::fastsplit::Known;
use fastprep::tokenize::Tokenizer;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tok = Tokenizer::from_json_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let docs: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&args[2]).unwrap()).unwrap();
    let bytes: usize = docs.iter().map(String::len).sum();
    let k = Known::Cl100k { max_digits: 3 };
    let mut pieces: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for d in &docs {
        out.clear();
        k.find_iter(d, &mut out);
        pieces.extend(out.iter().map(|&(s, e)| &d[s..e]));
    }
    let mut tokens = Vec::with_capacity(1 << 20);
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(6);
    for _ in 0..rounds {
        let t0 = std::time::Instant::now();
        tokens.clear();
        with_scratch(|scratch| {
            for p in &pieces {
                tok.model.tokenize(p, true, &mut tokens, scratch).unwrap();
            }
        });
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "{} tokens, {:.1} MB/s, {:.1} ns/piece",
            tokens.len(),
            bytes as f64 / dt / 1e6,
            dt * 1e9 / pieces.len() as f64
        );
    }
}
