//! The tokenize job's Parquet shards, written here rather than by pyarrow: one row group per
//! batch, columns `source` (dictionary string), `index` (int64), `window` (int32), `input_ids`
//! (list of uint32) and `num_tokens` (int32), none nullable.
//!
//! Why our own writer: pyarrow (libparquet) computes and RLE-encodes the two levels of a list
//! column one value at a time, ~10 ns a token, which made writing the ids cost half as much
//! CPU as tokenizing them on a multilingual corpus. A document's levels are two runs (its
//! first token, then the rest), and that is how they are written here: a few bytes per
//! document. The files are ordinary Parquet 2.6 (data pages v1, PLAIN, RLE, RLE_DICTIONARY and
//! DELTA_BINARY_PACKED, optionally Snappy), read by pyarrow, `datasets`, Ray, DuckDB; the
//! tests read them back with pyarrow and compare with what pyarrow itself writes.
pub mod encoding;
mod meta;
mod thrift;

use encoding::{delta_binary_packed, Runs};
pub use meta::Codec;
use meta::{Chunk, ColumnStats, Encoding, PageKind, PhysicalType};

/// How the `input_ids` values are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdsEncoding {
    Plain,
    DeltaBinaryPacked,
}

/// The most ids a data page holds (~1 MiB plain, libparquet's default page size): pages end at
/// a document's end, except inside a document longer than this.
const PAGE_VALUES: usize = 1 << 18;

#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("{0}")]
    Input(String),
}

/// One shard being written: `start` gives the file's first bytes, `row_group` each batch's,
/// `footer` the last.
pub struct TokenShard {
    codec: Codec,
    ids: IdsEncoding,
    source: Vec<u8>,
    key_value: Vec<(String, String)>,
    created_by: String,
    /// Bytes written so far (offsets in the file).
    written: u64,
    row_groups: Vec<meta::RowGroup>,
}

const MAGIC: &[u8; 4] = b"PAR1";

impl TokenShard {
    #[must_use]
    pub fn new(
        codec: Codec,
        ids: IdsEncoding,
        source: &str,
        key_value: Vec<(String, String)>,
        created_by: String,
    ) -> Self {
        Self {
            codec,
            ids,
            source: source.as_bytes().to_vec(),
            key_value,
            created_by,
            written: 0,
            row_groups: Vec::new(),
        }
    }

    /// The file's first bytes.
    pub fn start(&mut self) -> Vec<u8> {
        self.written = MAGIC.len() as u64;
        MAGIC.to_vec()
    }

    /// A row group of `num_tokens.len()` rows: row `r` holds the next `num_tokens[r]` ids.
    pub fn row_group(
        &mut self,
        index: &[i64],
        window: &[i32],
        num_tokens: &[i32],
        ids: &[u32],
    ) -> Result<Vec<u8>, ShardError> {
        let rows = num_tokens.len();
        if rows == 0 {
            return Err(ShardError::Input(
                "a row group needs at least one row".into(),
            ));
        }
        if index.len() != rows || window.len() != rows {
            return Err(ShardError::Input(format!(
                "index, window and num_tokens must have one value a row: {}, {}, {}",
                index.len(),
                window.len(),
                rows
            )));
        }
        let mut total: u64 = 0;
        for &n in num_tokens {
            let n =
                u64::try_from(n).map_err(|_| ShardError::Input("negative num_tokens".into()))?;
            total += n;
        }
        if total != ids.len() as u64 {
            return Err(ShardError::Input(format!(
                "num_tokens sum to {total}, but there are {} ids",
                ids.len()
            )));
        }
        // Room for plain ids and the pages' overhead, so the bytes are written once (delta-packed
        // ids take ~60% of it; the untouched rest of a large allocation is never paged in).
        let mut out = Vec::with_capacity(ids.len() * 17 / 4 + rows * 24 + 4096);
        let base = self.written;
        let chunks = vec![
            self.source_chunk(rows, base, &mut out),
            self.plain_chunk(
                "index",
                PhysicalType::Int64,
                rows,
                bytes_of(index),
                ColumnStats::of(index),
                base,
                &mut out,
            ),
            self.plain_chunk(
                "window",
                PhysicalType::Int32,
                rows,
                bytes_of(window),
                ColumnStats::of(window),
                base,
                &mut out,
            ),
            self.ids_chunk(num_tokens, ids, base, &mut out),
            self.plain_chunk(
                "num_tokens",
                PhysicalType::Int32,
                rows,
                bytes_of(num_tokens),
                ColumnStats::of(num_tokens),
                base,
                &mut out,
            ),
        ];
        self.written += out.len() as u64;
        self.row_groups.push(meta::RowGroup {
            chunks,
            rows: rows as i64,
            ordinal: self.row_groups.len() as i16,
        });
        Ok(out)
    }

    /// The footer (file metadata, its length, the magic): the file's last bytes.
    #[must_use]
    pub fn footer(&self) -> Vec<u8> {
        let mut out = meta::file_metadata(&self.row_groups, &self.key_value, &self.created_by);
        let len = out.len() as u32;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(MAGIC);
        out
    }

    /// `source`: a dictionary of the one source string, and every row index 0 (bit width 1).
    fn source_chunk(&self, rows: usize, base: u64, out: &mut Vec<u8>) -> Chunk {
        let start = out.len();
        let mut dict = Vec::with_capacity(self.source.len() + 4);
        dict.extend_from_slice(&(self.source.len() as u32).to_le_bytes());
        dict.extend_from_slice(&self.source);
        let dict_size = self.page(PageKind::Dictionary { values: 1 }, &dict, out);
        let data_at = out.len();
        let mut indices = vec![1u8];
        let mut runs = Runs::default();
        runs.push(0, rows as u64);
        indices.extend(runs.finish());
        let data_size = self.page(
            PageKind::Data {
                values: rows,
                encoding: Encoding::RleDictionary,
            },
            &indices,
            out,
        );
        Chunk {
            path: vec!["source"],
            physical: PhysicalType::ByteArray,
            encodings: vec![Encoding::Plain, Encoding::Rle, Encoding::RleDictionary],
            codec: self.codec,
            values: rows as i64,
            uncompressed: dict_size.0 + data_size.0,
            compressed: (out.len() - start) as i64,
            dictionary_offset: Some(base as i64 + start as i64),
            data_offset: base as i64 + data_at as i64,
            stats: None,
        }
    }

    /// A required column of fixed-width values: one PLAIN page.
    #[allow(clippy::too_many_arguments)]
    fn plain_chunk(
        &self,
        name: &'static str,
        physical: PhysicalType,
        rows: usize,
        bytes: &[u8],
        stats: Option<ColumnStats>,
        base: u64,
        out: &mut Vec<u8>,
    ) -> Chunk {
        let start = out.len();
        let (uncompressed, _) = self.page(
            PageKind::Data {
                values: rows,
                encoding: Encoding::Plain,
            },
            bytes,
            out,
        );
        Chunk {
            path: vec![name],
            physical,
            encodings: vec![Encoding::Plain],
            codec: self.codec,
            values: rows as i64,
            uncompressed,
            compressed: (out.len() - start) as i64,
            dictionary_offset: None,
            data_offset: base as i64 + start as i64,
            stats,
        }
    }

    /// `input_ids`: pages of whole documents, each with its repetition and definition levels
    /// (an empty document is one level entry with no value) and its ids.
    fn ids_chunk(&self, num_tokens: &[i32], ids: &[u32], base: u64, out: &mut Vec<u8>) -> Chunk {
        let start = out.len();
        let mut uncompressed = 0;
        let mut entries_total = 0i64;
        let mut body = Vec::new();
        // Row `r`, of which `done` ids are in earlier pages; `at`: ids written so far.
        let (mut r, mut done, mut at) = (0, 0usize, 0);
        while r < num_tokens.len() {
            let mut rep = Runs::default();
            let mut def = Runs::default();
            let (page_at, mut entries) = (at, 0usize);
            // Whole documents while the page has room; a document longer than a page is cut
            // across pages (its later parts start with repetition level 1), so no page passes
            // PAGE_VALUES ids and a page's size always fits the header's i32.
            while r < num_tokens.len() {
                let n = num_tokens[r] as usize;
                let room = PAGE_VALUES - (at - page_at);
                let left = n - done;
                if entries > 0 && left > room && n <= PAGE_VALUES {
                    break; // the next page starts with it
                }
                if n == 0 {
                    rep.push(0, 1);
                    def.push(0, 1);
                    entries += 1;
                    r += 1;
                    continue;
                }
                let take = left.min(room);
                if take == 0 {
                    break;
                }
                if done == 0 {
                    rep.push(0, 1);
                    rep.push(1, take as u64 - 1);
                } else {
                    rep.push(1, take as u64);
                }
                def.push(1, take as u64);
                entries += take;
                at += take;
                done += take;
                if done == n {
                    (r, done) = (r + 1, 0);
                }
            }
            body.clear();
            for levels in [rep.finish(), def.finish()] {
                body.extend_from_slice(&(levels.len() as u32).to_le_bytes());
                body.extend_from_slice(&levels);
            }
            let values = &ids[page_at..at];
            let encoding = if self.ids == IdsEncoding::DeltaBinaryPacked && !values.is_empty() {
                delta_binary_packed(values, &mut body);
                Encoding::DeltaBinaryPacked
            } else {
                body.extend_from_slice(bytes_of(values));
                Encoding::Plain
            };
            let (u, _) = self.page(
                PageKind::Data {
                    values: entries,
                    encoding,
                },
                &body,
                out,
            );
            uncompressed += u;
            entries_total += entries as i64;
        }
        let values_encoding = match self.ids {
            IdsEncoding::Plain => Encoding::Plain,
            IdsEncoding::DeltaBinaryPacked => Encoding::DeltaBinaryPacked,
        };
        Chunk {
            path: vec!["input_ids", "list", "element"],
            physical: PhysicalType::Int32,
            encodings: if values_encoding == Encoding::Plain {
                vec![Encoding::Plain, Encoding::Rle]
            } else {
                vec![Encoding::Plain, Encoding::Rle, values_encoding]
            },
            codec: self.codec,
            values: entries_total,
            uncompressed,
            compressed: (out.len() - start) as i64,
            dictionary_offset: None,
            data_offset: base as i64 + start as i64,
            stats: None,
        }
    }

    /// Appends a page (header, then the body compressed by the codec); returns its sizes,
    /// header included: (uncompressed, compressed).
    fn page(&self, kind: PageKind, body: &[u8], out: &mut Vec<u8>) -> (i64, i64) {
        let compressed;
        let stored: &[u8] = match self.codec {
            Codec::Uncompressed => body,
            Codec::Snappy => {
                compressed = snap::raw::Encoder::new()
                    .compress_vec(body)
                    .expect("snappy compresses any input below 4 GiB (pages are ~1 MiB)");
                &compressed
            }
        };
        let header = meta::page_header(kind, body.len(), stored.len());
        out.extend_from_slice(&header);
        out.extend_from_slice(stored);
        (
            (header.len() + body.len()) as i64,
            (header.len() + stored.len()) as i64,
        )
    }
}

/// The little-endian bytes of plain values (Parquet's PLAIN layout on this little-endian
/// machine).
fn bytes_of<T: plain::Integer>(values: &[T]) -> &[u8] {
    // SAFETY: `T` is a plain integer type (no padding, any bit pattern valid), so its slice
    // is `size_of_val` initialized bytes.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

mod plain {
    /// Integer types whose memory is their little-endian value (on the targets built).
    pub trait Integer: Copy {}
    impl Integer for i32 {}
    impl Integer for i64 {}
    impl Integer for u32 {}
}

#[cfg(not(target_endian = "little"))]
compile_error!("token shards write values in memory order, which must be little-endian");
