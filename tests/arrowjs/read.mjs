// read.mjs DIR: reads every *.arrow file in DIR with apache-arrow JS, zstd
// and lz4 body decompression registered, and prints one JSON document:
//
//   {"files": {"NAME.arrow": {
//      "batches": 2, "batchRows": [10, 0],
//      "metadata": {"k": "v"},
//      "fields": [{"name": "v", "type": "float64", "nullable": true,
//                  "metadata": {}, "values": ["3ff0000000000000", null]}]}},
//    "decoded": {"NAME.arrow": {"lz4": 0, "zstd": 3}}}
//
// Values: bool as true/false; integers and timestamps as decimal strings;
// floats as the hex of their IEEE-754 bits (16 or 8 digits, so NaN payloads,
// ±Inf and -0 survive); utf8 as string; binary as base64; null as null.
// "decoded" counts the body buffers each codec decompressed per file.
// Any read error, or a type without a canonical name, exits with status 1.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CompressionType,
  DataType,
  Precision,
  RecordBatchFileReader,
  TimeUnit,
  compressionRegistry,
} from 'apache-arrow';
import { decompress as zstdDecompress } from 'fzstd';
import lz4 from 'lz4js';

const roundUp8 = (n) => (n + 7) & ~7;

// aligned copies bytes into a fresh buffer that starts on an 8-byte boundary,
// as apache-arrow's typed-array views over body buffers require.
function aligned(bytes) {
  const out = new Uint8Array(new ArrayBuffer(roundUp8(bytes.length)), 0, bytes.length);
  out.set(bytes);
  return out;
}

let decoded = { lz4: 0, zstd: 0 };
compressionRegistry.set(CompressionType.LZ4_FRAME, {
  decode(bytes) {
    decoded.lz4++;
    return aligned(lz4.decompress(bytes));
  },
});
compressionRegistry.set(CompressionType.ZSTD, {
  decode(bytes) {
    decoded.zstd++;
    return aligned(zstdDecompress(bytes));
  },
});

const unitNames = {
  [TimeUnit.SECOND]: 's',
  [TimeUnit.MILLISECOND]: 'ms',
  [TimeUnit.MICROSECOND]: 'us',
  [TimeUnit.NANOSECOND]: 'ns',
};

// typeName returns the canonical type string shared with the Go test.
function typeName(t) {
  if (DataType.isBool(t)) {
    return 'bool';
  }
  if (DataType.isInt(t)) {
    return `${t.isSigned ? 'int' : 'uint'}${t.bitWidth}`;
  }
  if (DataType.isFloat(t)) {
    if (t.precision === Precision.SINGLE) {
      return 'float32';
    }
    if (t.precision === Precision.DOUBLE) {
      return 'float64';
    }
  }
  if (DataType.isUtf8(t)) {
    return 'utf8';
  }
  if (DataType.isBinary(t)) {
    return 'binary';
  }
  if (DataType.isTimestamp(t)) {
    const unit = unitNames[t.unit];
    return t.timezone ? `timestamp[${unit}, tz=${t.timezone}]` : `timestamp[${unit}]`;
  }
  throw new Error(`no canonical name for type ${t}`);
}

function hexBits(values, i, width) {
  const b = new Uint8Array(values.buffer, values.byteOffset + i * width, width);
  let s = '';
  for (let k = width - 1; k >= 0; k--) {
    s += b[k].toString(16).padStart(2, '0');
  }
  return s;
}

// render returns row i of column data d (one apache-arrow Data chunk).
function render(vec, d, i) {
  if (!vec.isValid(i)) {
    return null;
  }
  const t = d.type;
  if (DataType.isFloat(t)) {
    const width = t.precision === Precision.DOUBLE ? 8 : 4;
    return hexBits(d.values, d.offset + i, width);
  }
  if (DataType.isInt(t) || DataType.isTimestamp(t)) {
    return String(d.values[d.offset + i]);
  }
  if (DataType.isBool(t)) {
    return vec.get(i);
  }
  if (DataType.isUtf8(t)) {
    return vec.get(i);
  }
  if (DataType.isBinary(t)) {
    return Buffer.from(vec.get(i)).toString('base64');
  }
  throw new Error(`cannot render type ${t}`);
}

function describeFile(path) {
  const reader = RecordBatchFileReader.from(aligned(readFileSync(path)));
  reader.open();
  if (!reader.isFile()) {
    throw new Error('not an Arrow IPC file');
  }
  const { schema } = reader;
  const fields = schema.fields.map((f) => ({
    name: f.name,
    type: typeName(f.type),
    nullable: f.nullable,
    metadata: Object.fromEntries(f.metadata),
    values: [],
  }));
  const batchRows = [];
  for (let b = 0; b < reader.numRecordBatches; b++) {
    const batch = reader.readRecordBatch(b);
    if (!batch) {
      throw new Error(`record batch ${b} is missing`);
    }
    batchRows.push(batch.numRows);
    fields.forEach((field, j) => {
      const vec = batch.getChildAt(j);
      if (vec.length !== batch.numRows) {
        throw new Error(`batch ${b} field ${field.name}: ${vec.length} rows, batch has ${batch.numRows}`);
      }
      const d = vec.data[0];
      for (let i = 0; i < vec.length; i++) {
        field.values.push(render(vec, d, i));
      }
    });
  }
  return {
    batches: reader.numRecordBatches,
    batchRows,
    metadata: Object.fromEntries(schema.metadata),
    fields,
  };
}

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node read.mjs DIR');
  process.exit(2);
}
const out = { files: {}, decoded: {} };
let failed = false;
for (const name of readdirSync(dir)
  .filter((n) => n.endsWith('.arrow'))
  .sort()) {
  decoded = { lz4: 0, zstd: 0 };
  try {
    out.files[name] = describeFile(join(dir, name));
  } catch (err) {
    console.error(`${name}: ${err && err.stack ? err.stack : err}`);
    failed = true;
    continue;
  }
  out.decoded[name] = decoded;
}
if (failed) {
  process.exit(1);
}
process.stdout.write(JSON.stringify(out) + '\n');
