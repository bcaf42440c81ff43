//! Thrift's compact protocol, the writing half, for Parquet's page headers and file footer
//! (parquet.thrift's structs are written field by field by `parquet::meta`).
//!
//! Field headers carry the id's delta from the previous field of the same struct (ids must
//! rise), so a struct's last id is saved on entry and restored on exit.

/// Compact protocol type codes.
#[derive(Clone, Copy)]
#[repr(u8)]
pub enum Type {
    I8 = 3,
    I16 = 4,
    I32 = 5,
    I64 = 6,
    Binary = 8,
    List = 9,
    Struct = 12,
}

const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;

pub struct Writer {
    pub out: Vec<u8>,
    last: i16,
    stack: Vec<i16>,
}

impl Writer {
    pub fn new() -> Self {
        Self {
            out: Vec::with_capacity(256),
            last: 0,
            stack: Vec::new(),
        }
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn header(&mut self, id: i16, ty: u8) {
        let delta = id - self.last;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | ty);
        } else {
            self.out.push(ty);
            self.zigzag(i64::from(id));
        }
        self.last = id;
    }

    pub fn i16(&mut self, id: i16, v: i16) {
        self.header(id, Type::I16 as u8);
        self.zigzag(i64::from(v));
    }

    pub fn i32(&mut self, id: i16, v: i32) {
        self.header(id, Type::I32 as u8);
        self.zigzag(i64::from(v));
    }

    pub fn i64(&mut self, id: i16, v: i64) {
        self.header(id, Type::I64 as u8);
        self.zigzag(v);
    }

    pub fn i8(&mut self, id: i16, v: i8) {
        self.header(id, Type::I8 as u8);
        self.out.push(v as u8);
    }

    pub fn bool(&mut self, id: i16, v: bool) {
        self.header(id, if v { BOOL_TRUE } else { BOOL_FALSE });
    }

    pub fn binary(&mut self, id: i16, v: &[u8]) {
        self.header(id, Type::Binary as u8);
        self.raw_binary(v);
    }

    fn raw_binary(&mut self, v: &[u8]) {
        self.varint(v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// Opens a struct field; `end` closes it.
    pub fn begin(&mut self, id: i16) {
        self.header(id, Type::Struct as u8);
        self.enter();
    }

    /// Starts a struct that is a list element (no field header).
    pub fn enter(&mut self) {
        self.stack.push(self.last);
        self.last = 0;
    }

    pub fn end(&mut self) {
        self.out.push(0);
        self.last = self.stack.pop().unwrap_or(0);
    }

    /// A list field's header; its `n` elements follow (`list_i32`, `list_binary`, or `enter`/
    /// `end` per struct).
    pub fn list(&mut self, id: i16, elem: Type, n: usize) {
        self.header(id, Type::List as u8);
        if n < 15 {
            self.out.push(((n as u8) << 4) | elem as u8);
        } else {
            self.out.push(0xF0 | elem as u8);
            self.varint(n as u64);
        }
    }

    pub fn list_i32(&mut self, id: i16, items: &[i32]) {
        self.list(id, Type::I32, items.len());
        for &v in items {
            self.zigzag(i64::from(v));
        }
    }

    pub fn list_binary(&mut self, id: i16, items: &[&[u8]]) {
        self.list(id, Type::Binary, items.len());
        for v in items {
            self.raw_binary(v);
        }
    }

    /// The message's end (the top-level struct's stop byte).
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(0);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_headers_use_deltas_and_long_form() {
        let mut w = Writer::new();
        w.i32(1, -1); // delta 1, zigzag(-1) = 1
        w.i64(17, 300); // delta 16: long form, id zigzag 34, value zigzag 600
        w.bool(18, true);
        let out = w.finish();
        assert_eq!(
            out,
            vec![0x15, 0x01, 0x06, 34, 0xD8, 0x04, 0x11, 0x00],
            "{out:x?}"
        );
    }

    #[test]
    fn nested_structs_restore_the_outer_field_id() {
        let mut w = Writer::new();
        w.i32(2, 0);
        w.begin(3);
        w.i32(1, 0);
        w.end();
        w.i32(4, 0); // delta 1 from field 3, not from the inner field 1
        let out = w.finish();
        assert_eq!(out, vec![0x25, 0, 0x1C, 0x15, 0, 0, 0x15, 0, 0]);
    }

    #[test]
    fn long_lists_have_their_size_apart() {
        let mut w = Writer::new();
        w.list_i32(1, &[0; 20]);
        assert_eq!(&w.out[..3], &[0x19, 0xF5, 20]);
    }
}
