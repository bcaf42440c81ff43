//! Many Rust threads sharing one pool: no block is ever held by two threads, writes to one block
//! never show up in another, and every block comes back.
use fastprep::{Pool, PoolConfig};
use std::sync::Arc;
use std::time::Duration;

fn hammer(pool: &Arc<Pool>, threads: usize, iterations: usize) {
    std::thread::scope(|s| {
        for t in 0..threads {
            let pool = Arc::clone(pool);
            s.spawn(move || {
                for i in 0..iterations {
                    let mut block = pool
                        .acquire(Some(Duration::from_secs(30)))
                        .expect("no deadlock");
                    let tag = ((t * 1_000_003 + i) as u64).to_le_bytes();
                    let bytes = block.as_mut_slice().unwrap();
                    for chunk in bytes.chunks_exact_mut(8) {
                        chunk.copy_from_slice(&tag);
                    }
                    std::thread::yield_now();
                    assert!(
                        block.as_slice().unwrap().chunks_exact(8).all(|c| c == tag),
                        "thread {t}: block {} was written by another holder",
                        block.id()
                    );
                }
            });
        }
    });
}

#[test]
fn eight_threads_fewer_blocks_than_threads() {
    let pool = Pool::new(PoolConfig::host(256, 3)).unwrap();
    hammer(&pool, 8, 20_000);
    let s = pool.stats();
    assert_eq!(s.in_use, 0);
    assert_eq!(s.acquires, 160_000);
    assert_eq!(s.releases, 160_000);
    assert!(s.high_water <= 3);
}

#[test]
fn growing_pool_under_contention() {
    let cfg = PoolConfig {
        grow: true,
        max_blocks: Some(64),
        ..PoolConfig::host(128, 2)
    };
    let pool = Pool::new(cfg).unwrap();
    hammer(&pool, 8, 5_000);
    let s = pool.stats();
    assert_eq!(s.in_use, 0);
    assert!(s.capacity <= 64 && s.capacity >= 2);
    assert_eq!(s.capacity, 2 * (s.grows as usize + 1));
}
