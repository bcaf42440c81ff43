//! Times `encode_ids` of a few short texts (the fixed cost of a call), without Python:
//! `cargo run --release --example short_time -- tokenizer.json [text index] [repetitions]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tok =
        fastprep::tokenize::Tokenizer::from_json_str(&std::fs::read_to_string(&args[1]).unwrap())
            .unwrap();
    let all = [
        "The quick brown fox jumps over the lazy dog; it costs $12.50 — ça va? 日本語も少し。 🙂 ok.",
        "The quick brown fox jumps over the lazy dog and the cat sat on the mat again today ok",
        "a",
    ];
    let which: usize = args.get(2).map_or(9, |a| a.parse().unwrap());
    let reps: usize = args.get(3).map_or(1_000_000, |a| a.parse().unwrap());
    for (i, text) in all.iter().enumerate() {
        if which != 9 && which != i {
            continue;
        }
        let n = tok.encode_ids(text, false, None).unwrap().unwrap().len();
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for _ in 0..reps {
                std::hint::black_box(
                    tok.encode_ids(std::hint::black_box(text), false, None)
                        .unwrap(),
                );
            }
            println!(
                "{n} tokens {:.1} ns",
                t.elapsed().as_nanos() as f64 / reps as f64
            );
        }
    }
}
