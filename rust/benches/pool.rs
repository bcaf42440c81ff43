//! Raw acquire + release of one block, with no Python involved (goal: <= 50 ns).
use criterion::{criterion_group, criterion_main, Criterion};
use fastprep::{Pool, PoolConfig};
use std::hint::black_box;

fn acquire_release(c: &mut Criterion) {
    let mut group = c.benchmark_group("pool");
    for size in [1 << 10, 64 << 10, 1 << 20, 16 << 20] {
        let pool = Pool::new(PoolConfig::host(size, 8)).unwrap();
        group.bench_function(format!("acquire_release_raw/{size}"), |b| {
            b.iter(|| {
                let raw = pool.try_acquire_raw().unwrap().unwrap();
                // SAFETY: acquired just above, released once.
                unsafe { pool.release_raw(black_box(raw).id) };
            });
        });
        group.bench_function(format!("acquire_release_block/{size}"), |b| {
            b.iter(|| drop(black_box(pool.try_acquire().unwrap().unwrap())));
        });
    }
    group.finish();
}

criterion_group!(benches, acquire_release);
criterion_main!(benches);
