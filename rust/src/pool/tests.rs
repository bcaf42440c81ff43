use super::*;
use std::collections::HashSet;
use std::time::Duration;

fn pool(block_size: usize, n: usize) -> Arc<Pool> {
    Pool::new(PoolConfig::host(block_size, n)).unwrap()
}

#[test]
fn hands_out_every_block_once_then_is_exhausted() {
    let p = pool(100, 5);
    let blocks: Vec<_> = (0..5).map(|_| p.try_acquire().unwrap().unwrap()).collect();
    let ids: HashSet<_> = blocks.iter().map(Block::id).collect();
    assert_eq!(ids.len(), 5);
    assert!(p.try_acquire().unwrap().is_none());
    let s = p.stats();
    assert_eq!(
        (s.in_use, s.high_water, s.acquires, s.exhausted),
        (5, 5, 5, 1)
    );
    drop(blocks);
    let s = p.stats();
    assert_eq!((s.in_use, s.releases, s.high_water), (0, 5, 5));
}

#[test]
fn blocks_are_aligned_disjoint_and_inside_the_reservation() {
    for align in [1usize, 8, 64, 4096] {
        let p = Pool::new(PoolConfig {
            alignment: align,
            ..PoolConfig::host(1000, 7)
        })
        .unwrap();
        let mut blocks: Vec<_> = (0..7).map(|_| p.try_acquire().unwrap().unwrap()).collect();
        for (i, b) in blocks.iter_mut().enumerate() {
            assert_eq!(b.as_ptr() as usize % align, 0);
            b.as_mut_slice().unwrap().fill(i as u8);
        }
        for (i, b) in blocks.iter().enumerate() {
            assert!(
                b.as_slice().unwrap().iter().all(|&x| x == i as u8),
                "block {i} was overwritten"
            );
        }
        assert_eq!(p.reserved_bytes(), 1000usize.next_multiple_of(align) * 7);
    }
}

#[test]
fn rejects_bad_configs_with_a_reason() {
    let cases = [
        (PoolConfig::host(0, 4), "block_size"),
        (PoolConfig::host(8, 0), "num_blocks"),
        (
            PoolConfig {
                alignment: 48,
                ..PoolConfig::host(8, 4)
            },
            "power of two",
        ),
        (PoolConfig::host(usize::MAX / 2, 4), "address space"),
        (
            PoolConfig {
                grow: true,
                max_blocks: Some(2),
                ..PoolConfig::host(8, 4)
            },
            "max_blocks",
        ),
    ];
    for (cfg, needle) in cases {
        let err = Pool::new(cfg).unwrap_err().to_string();
        assert!(err.contains(needle), "{err:?} should mention {needle:?}");
    }
}

#[test]
fn grow_adds_whole_chunks_up_to_max_blocks() {
    let p = Pool::new(PoolConfig {
        grow: true,
        max_blocks: Some(9),
        ..PoolConfig::host(64, 3)
    })
    .unwrap();
    let mut held = Vec::new();
    for _ in 0..9 {
        held.push(p.try_acquire().unwrap().expect("pool should grow"));
    }
    assert!(
        p.try_acquire().unwrap().is_none(),
        "max_blocks=9 is three chunks of 3"
    );
    let s = p.stats();
    assert_eq!((s.capacity, s.grows, s.in_use), (9, 2, 9));
    let ids: HashSet<_> = held.iter().map(Block::id).collect();
    assert_eq!(ids.len(), 9);
    drop(held);
    assert_eq!(p.stats().in_use, 0);
    assert_eq!(p.capacity(), 9, "grown chunks stay reserved");
}

#[test]
fn acquire_times_out_with_stats_in_the_message() {
    let p = pool(16, 1);
    let _b = p.acquire(None).unwrap();
    let err = p.acquire(Some(Duration::from_millis(30))).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("exhausted") && msg.contains("capacity=1") && msg.contains("grow=True"),
        "{msg}"
    );
    let s = p.stats();
    assert_eq!((s.waits, s.exhausted), (1, 1));
}

#[test]
fn a_waiting_acquire_gets_the_released_block() {
    let p = pool(16, 1);
    let b = p.acquire(None).unwrap();
    let id = b.id();
    let p2 = Arc::clone(&p);
    let waiter =
        std::thread::spawn(move || p2.acquire(Some(Duration::from_secs(10))).map(|b| b.id()));
    std::thread::sleep(Duration::from_millis(50));
    drop(b);
    assert_eq!(waiter.join().unwrap().unwrap(), id);
}

#[test]
fn the_pool_outlives_its_handle_while_blocks_live() {
    let p = pool(32, 2);
    let mut b = p.try_acquire().unwrap().unwrap();
    drop(p);
    b.as_mut_slice().unwrap().fill(7);
    assert_eq!(b.pool().stats().in_use, 1);
}

struct FailingAllocator;
impl ChunkAllocator for FailingAllocator {
    fn allocate(&self, bytes: usize, _alignment: usize) -> Result<ChunkMemory, PoolError> {
        Err(PoolError::Alloc {
            bytes,
            kind: "cuda",
            reason: "no device".into(),
        })
    }
}

#[test]
fn allocator_errors_surface() {
    let cfg = PoolConfig {
        kind: MemoryKind::Device,
        ..PoolConfig::host(8, 2)
    };
    let err = Pool::with_allocator(cfg, Box::new(FailingAllocator)).unwrap_err();
    assert!(err.to_string().contains("no device"));
}

#[test]
fn device_blocks_are_not_host_accessible() {
    struct Fake;
    impl ChunkAllocator for Fake {
        fn allocate(&self, bytes: usize, alignment: usize) -> Result<ChunkMemory, PoolError> {
            let v = vec![0u8; bytes + alignment];
            let ptr = v.as_ptr() as usize;
            // SAFETY: the vector is moved into the owner and lives as long as the chunk.
            Ok(unsafe { ChunkMemory::from_owner(ptr, v.len(), alignment, Box::new(v)) }.unwrap())
        }
    }
    let cfg = PoolConfig {
        kind: MemoryKind::Device,
        ..PoolConfig::host(8, 2)
    };
    let p = Pool::with_allocator(cfg, Box::new(Fake)).unwrap();
    let mut b = p.try_acquire().unwrap().unwrap();
    assert!(b.as_slice().is_none() && b.as_mut_slice().is_none());
    assert_eq!(b.as_ptr() as usize % 64, 0);
}
