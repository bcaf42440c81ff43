//! parquet.thrift's structs as token shards need them: page headers and the file metadata
//! (schema, row groups, column chunks, statistics), field ids as in parquet.thrift.
use super::thrift::{Type, Writer};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    Uncompressed = 0,
    Snappy = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Plain = 0,
    Rle = 3,
    DeltaBinaryPacked = 5,
    RleDictionary = 8,
}

#[derive(Clone, Copy)]
pub enum PhysicalType {
    Int32 = 1,
    Int64 = 2,
    ByteArray = 6,
}

pub enum PageKind {
    Data { values: usize, encoding: Encoding },
    Dictionary { values: usize },
}

/// Min and max of an integer column, as PLAIN bytes (the statistics pyarrow writes for
/// `index`, `window` and `num_tokens`).
pub struct ColumnStats {
    min: Vec<u8>,
    max: Vec<u8>,
}

pub trait StatValue: Copy + Ord {
    fn le(self) -> Vec<u8>;
}
impl StatValue for i32 {
    fn le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}
impl StatValue for i64 {
    fn le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl ColumnStats {
    pub fn of<T: StatValue>(values: &[T]) -> Option<Self> {
        let min = values.iter().copied().min()?;
        let max = values.iter().copied().max()?;
        Some(Self {
            min: min.le(),
            max: max.le(),
        })
    }
}

pub struct Chunk {
    pub path: Vec<&'static str>,
    pub physical: PhysicalType,
    pub encodings: Vec<Encoding>,
    pub codec: Codec,
    pub values: i64,
    pub uncompressed: i64,
    pub compressed: i64,
    pub dictionary_offset: Option<i64>,
    pub data_offset: i64,
    pub stats: Option<ColumnStats>,
}

pub struct RowGroup {
    pub chunks: Vec<Chunk>,
    pub rows: i64,
    pub ordinal: i16,
}

/// A PageHeader: data pages v1 with RLE levels, or a PLAIN dictionary page.
pub fn page_header(kind: PageKind, uncompressed: usize, compressed: usize) -> Vec<u8> {
    let mut w = Writer::new();
    let ty = match kind {
        PageKind::Data { .. } => 0,
        PageKind::Dictionary { .. } => 2,
    };
    w.i32(1, ty);
    w.i32(2, uncompressed as i32);
    w.i32(3, compressed as i32);
    match kind {
        PageKind::Data { values, encoding } => {
            w.begin(5);
            w.i32(1, values as i32);
            w.i32(2, encoding as i32);
            w.i32(3, Encoding::Rle as i32);
            w.i32(4, Encoding::Rle as i32);
            w.end();
        }
        PageKind::Dictionary { values } => {
            w.begin(7);
            w.i32(1, values as i32);
            w.i32(2, Encoding::Plain as i32);
            w.end();
        }
    }
    w.finish()
}

// SchemaElement repetition types and converted types.
const REQUIRED: i32 = 0;
const REPEATED: i32 = 2;
const UTF8: i32 = 0;
const LIST: i32 = 3;
const UINT_32: i32 = 14;

/// FileMetaData: the schema (see `parquet`'s module note), the row groups, `key_value`
/// (pyarrow's `ARROW:schema`, so Arrow readers get the column types back exactly), and every
/// leaf's column order (type-defined: readers then trust the min/max statistics).
pub fn file_metadata(
    row_groups: &[RowGroup],
    key_value: &[(String, String)],
    created_by: &str,
) -> Vec<u8> {
    let mut w = Writer::new();
    w.i32(1, 2);
    w.list(2, Type::Struct, 8);
    let int32 = Some(PhysicalType::Int32);
    schema_element(&mut w, "schema", None, None, Some(5), None);
    schema_element(
        &mut w,
        "source",
        Some(PhysicalType::ByteArray),
        Some(REQUIRED),
        None,
        Some(UTF8),
    );
    schema_element(
        &mut w,
        "index",
        Some(PhysicalType::Int64),
        Some(REQUIRED),
        None,
        None,
    );
    schema_element(&mut w, "window", int32, Some(REQUIRED), None, None);
    schema_element(
        &mut w,
        "input_ids",
        None,
        Some(REQUIRED),
        Some(1),
        Some(LIST),
    );
    schema_element(&mut w, "list", None, Some(REPEATED), Some(1), None);
    schema_element(
        &mut w,
        "element",
        int32,
        Some(REQUIRED),
        None,
        Some(UINT_32),
    );
    schema_element(&mut w, "num_tokens", int32, Some(REQUIRED), None, None);
    w.i64(3, row_groups.iter().map(|g| g.rows).sum());
    w.list(4, Type::Struct, row_groups.len());
    for g in row_groups {
        w.enter();
        w.list(1, Type::Struct, g.chunks.len());
        for c in &g.chunks {
            column_chunk(&mut w, c);
        }
        let first = g
            .chunks
            .first()
            .map_or(0, |c| c.dictionary_offset.unwrap_or(c.data_offset));
        w.i64(2, g.chunks.iter().map(|c| c.uncompressed).sum());
        w.i64(3, g.rows);
        w.i64(5, first);
        w.i64(6, g.chunks.iter().map(|c| c.compressed).sum());
        w.i16(7, g.ordinal);
        w.end();
    }
    if !key_value.is_empty() {
        w.list(5, Type::Struct, key_value.len());
        for (k, v) in key_value {
            w.enter();
            w.binary(1, k.as_bytes());
            w.binary(2, v.as_bytes());
            w.end();
        }
    }
    w.binary(6, created_by.as_bytes());
    // column_orders: TYPE_ORDER (field 1, an empty TypeDefinedOrder) for each of the 5 leaves.
    w.list(7, Type::Struct, 5);
    for _ in 0..5 {
        w.enter();
        w.begin(1);
        w.end();
        w.end();
    }
    w.finish()
}

/// ColumnChunk with its ColumnMetaData.
fn column_chunk(w: &mut Writer, c: &Chunk) {
    w.enter();
    w.i64(2, c.dictionary_offset.unwrap_or(c.data_offset));
    w.begin(3);
    w.i32(1, c.physical as i32);
    let encodings: Vec<i32> = c.encodings.iter().map(|&e| e as i32).collect();
    w.list_i32(2, &encodings);
    let path: Vec<&[u8]> = c.path.iter().map(|p| p.as_bytes()).collect();
    w.list_binary(3, &path);
    w.i32(4, c.codec as i32);
    w.i64(5, c.values);
    w.i64(6, c.uncompressed);
    w.i64(7, c.compressed);
    w.i64(9, c.data_offset);
    if let Some(d) = c.dictionary_offset {
        w.i64(11, d);
    }
    if let Some(s) = &c.stats {
        // Statistics: null_count (3), max_value (5), min_value (6).
        w.begin(12);
        w.i64(3, 0);
        w.binary(5, &s.max);
        w.binary(6, &s.min);
        w.end();
    }
    w.end();
    w.end();
}

fn schema_element(
    w: &mut Writer,
    name: &str,
    physical: Option<PhysicalType>,
    repetition: Option<i32>,
    children: Option<i32>,
    converted: Option<i32>,
) {
    w.enter();
    if let Some(p) = physical {
        w.i32(1, p as i32);
    }
    if let Some(r) = repetition {
        w.i32(3, r);
    }
    w.binary(4, name.as_bytes());
    if let Some(n) = children {
        w.i32(5, n);
    }
    if let Some(c) = converted {
        w.i32(6, c);
        // LogicalType (field 10), a union: STRING (1), LIST (3) or INTEGER (10: bit width,
        // signedness).
        w.begin(10);
        match c {
            UTF8 => {
                w.begin(1);
                w.end();
            }
            LIST => {
                w.begin(3);
                w.end();
            }
            _ => {
                w.begin(10);
                w.i8(1, 32);
                w.bool(2, false);
                w.end();
            }
        }
        w.end();
    }
    w.end();
}
