//! Times a pre-tokenization splitter alone over a JSON list of documents: cl100k's hand-written
//! matcher, or with `PATTERN=<regex>` the engine `Pattern::regex` picks for it.
use fastprep::tokenize::fastsplit::Known;
use fastprep::tokenize::pattern::Pattern;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let docs: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let bytes: usize = docs.iter().map(String::len).sum();
    let k = Known::Cl100k { max_digits: 3 };
    let pattern = std::env::var("PATTERN")
        .ok()
        .map(|p| Pattern::regex(&p).unwrap());
    if let Some(p) = &pattern {
        println!("engine: {}", p.engine());
    }
    let mut out = Vec::new();
    let rounds: usize = std::env::var("ROUNDS").map_or(5, |r| r.parse().unwrap());
    for _ in 0..rounds {
        let t0 = std::time::Instant::now();
        let mut n = 0;
        for d in &docs {
            if let Some(p) = &pattern {
                p.for_each_match(d, |_, _| n += 1);
            } else {
                out.clear();
                k.find_iter(d, &mut out);
                n += out.len();
            }
        }
        let dt = t0.elapsed().as_secs_f64();
        println!("{n} pieces, {:.1} MB/s", bytes as f64 / dt / 1e6);
    }
}
