//! Times the cl100k pre-tokenization splitter alone over a JSON list of documents.
use fastprep::tokenize::fastsplit::Known;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let docs: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let bytes: usize = docs.iter().map(String::len).sum();
    let k = Known::Cl100k { max_digits: 3 };
    let mut out = Vec::new();
    let rounds: usize = std::env::var("ROUNDS").map_or(5, |r| r.parse().unwrap());
    for _ in 0..rounds {
        let t0 = std::time::Instant::now();
        let mut n = 0;
        for d in &docs {
            out.clear();
            k.find_iter(d, &mut out);
            n += out.len();
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("{n} pieces, {:.1} MB/s", bytes as f64 / dt / 1e6);
    }
}
