// A Pulumi callbacks server in JavaScript over raw gRPC, with no Pulumi SDK:
// the conformance kit's fixture for an author who starts from
// CONFORMANCE.md alone. It loads the protocol from the FileDescriptorSet
// that `callbackconform -protos DIR` writes, serves pulumirpc.Callbacks,
// registers one callback of each of the five kinds with the engine's
// ResourceMonitor, calls SignalAndWaitForShutdown, and stops when it
// returns.
//
//   go run ./cmd/callbackconform -protos /tmp/protos
//   (cd testdata/rawjs && npm ci)
//   go run ./cmd/callbackconform -- node testdata/rawjs/server.js /tmp/protos/pulumi-callbacks.fds.pb
//
// Its functions follow the kit's fixture convention (CONFORMANCE.md). The
// server is lossless: it decodes with protobufjs, which keeps -0 and a
// leading U+FEFF but drops unknown fields, so it copies the request's
// unknown option fields into the answer's options itself; and it parses a
// migration's JSON state keeping every number's text.
//
// CONFORM_LOSSY (a comma-separated list) switches on the faults of a lossy
// server, to show that the kit catches each: "bom" strips a leading U+FEFF
// from every string value, "negzero" turns -0 into 0, "unknown" drops
// unknown fields, "empty" answers {} whatever the function returned, "json"
// reads and writes a migration's state with JSON.parse and JSON.stringify.
"use strict";

const fs = require("fs");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const protobuf = require("protobufjs");
require("protobufjs/ext/descriptor");

const lossy = new Set((process.env.CONFORM_LOSSY || "").split(",").filter(Boolean));

// The protocol, from the kit's descriptor set.
const fdsPath = process.argv[2];
if (!fdsPath) {
  console.error("usage: node server.js PULUMI-CALLBACKS.FDS.PB (written by callbackconform -protos DIR)");
  process.exit(2);
}
const fds = fs.readFileSync(fdsPath);
const root = protobuf.Root.fromDescriptor(fds);
// protobufjs refuses to decode or encode messages nested more than 100
// deep (protoc's default); the engine forwards whatever nesting a program
// built, up to protobuf's 10,000 levels (a list in a list is two: Value,
// then ListValue). Its decoder and encoder recurse, so node needs a larger
// stack too: run it with --stack-size=6000 (CONFORMANCE.md).
protobuf.Reader.recursionLimit = 10000;
protobuf.util.recursionLimit = 10000;
const T = (name) => root.lookupType("pulumirpc." + name);
const Envelope = T("CallbackInvokeRequest");
const EnvelopeResponse = T("CallbackInvokeResponse");

// ---- Wire helpers: read fields, keep the ones a type does not know. ----

function readVarint(b, i) {
  let v = 0n;
  let shift = 0n;
  for (;;) {
    if (i >= b.length) throw new Error("truncated varint");
    const x = b[i++];
    v |= BigInt(x & 0x7f) << shift;
    if (x < 0x80) return [v, i];
    shift += 7n;
  }
}

// fields splits an encoded message into [number, wireType, start, end]
// entries (start..end is the whole field, tag included; payload the
// length-delimited contents).
function fields(b) {
  const out = [];
  let i = 0;
  while (i < b.length) {
    const start = i;
    let tag;
    [tag, i] = readVarint(b, i);
    const num = Number(tag >> 3n);
    const wt = Number(tag & 7n);
    let payload = null;
    switch (wt) {
      case 0: [, i] = readVarint(b, i); break;
      case 1: i += 8; break;
      case 5: i += 4; break;
      case 2: {
        let len;
        [len, i] = readVarint(b, i);
        payload = [i, i + Number(len)];
        i += Number(len);
        break;
      }
      default: throw new Error("unsupported wire type " + wt);
    }
    if (i > b.length) throw new Error("truncated field");
    out.push({ num, wt, start, end: i, payload });
  }
  return out;
}

function varint(n) {
  const out = [];
  let v = BigInt(n);
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

function lengthDelimited(num, payload) {
  return Buffer.concat([varint((num << 3) | 2), varint(payload.length), payload]);
}

// graft returns encoded, the encoding of a message of type, with the
// unknown fields of original (the request's encoding of the same message)
// appended, and those of its singular message fields grafted in turn: the
// engine replaces options wholesale, so what a newer engine sends must come
// back byte for byte.
function graft(type, original, encoded) {
  if (lossy.has("unknown")) return encoded;
  const orig = fields(original);
  const unknown = orig.filter((f) => !type.fieldsById[f.num]).map((f) => original.subarray(f.start, f.end));
  const parts = [];
  for (const f of fields(encoded)) {
    const fd = type.fieldsById[f.num];
    const sub = fd && !fd.repeated && fd.resolvedType instanceof protobuf.Type ? fd.resolvedType : null;
    const before = sub && orig.find((o) => o.num === f.num && o.payload);
    if (before && f.payload) {
      const inner = graft(sub, original.subarray(...before.payload), encoded.subarray(...f.payload));
      parts.push(lengthDelimited(f.num, inner));
    } else {
      parts.push(encoded.subarray(f.start, f.end));
    }
  }
  return Buffer.concat([...parts, ...unknown]);
}

// fieldBytes returns the encoding of field num of an encoded message.
function fieldBytes(b, num) {
  const f = fields(b).find((x) => x.num === num && x.payload);
  return f ? b.subarray(...f.payload) : null;
}

// checkUTF8 refuses a string field that is not UTF-8, which protobufjs
// would decode leniently into other characters.
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
function checkUTF8(type, b) {
  for (const f of fields(b)) {
    const fd = type.fieldsById[f.num];
    if (!fd || !f.payload) continue;
    const bytes = b.subarray(...f.payload);
    if (fd.type === "string") {
      try {
        strict.decode(bytes);
      } catch {
        throw new Error(`${fd.name}: a string field is not UTF-8`);
      }
    } else if (fd.resolvedType instanceof protobuf.Type) {
      checkUTF8(fd.resolvedType, bytes);
    }
  }
}

// ---- Values: a Struct is a list of {key, value} entries here. ----

function mapValues(v, fn) {
  if (!v) return v;
  if (v.struct_value) v.struct_value.fields.forEach((e) => (e.value = mapValues(e.value, fn)));
  if (v.list_value) v.list_value.values = v.list_value.values.map((x) => mapValues(x, fn));
  return fn(v);
}

// lose applies the switched-on faults to a Struct's values.
function lose(struct) {
  if (!struct) return struct;
  struct.fields.forEach((e) => {
    e.value = mapValues(e.value, (v) => {
      if (lossy.has("bom") && typeof v.string_value === "string") v.string_value = v.string_value.replace(/^\ufeff/, "");
      if (lossy.has("negzero") && Object.is(v.number_value, -0)) v.number_value = 0;
      return v;
    });
  });
  return struct;
}

// ---- The fixture convention's functions. ----

const refusal = "conform: refused refuse-me";

function resourceTransform(req) {
  if (req.name === "lossless") {
    req.properties.fields.push({ key: "conformAdded", value: { string_value: "added by the transform" } });
    req.options.retain_on_delete = true;
  }
  return { properties: req.properties, options: req.options };
}

function invokeTransform(req) {
  if (req.token === "conform:index:lossless") {
    req.args.fields.push({ key: "conformAdded", value: { string_value: "added by the transform" } });
    req.options.version = "7.0.0";
  }
  return { args: req.args, options: req.options };
}

function resourceHook(req) {
  return req.name === "refuse-me" ? { error: refusal } : {};
}

function errorHook(req) {
  return { retry: req.errors.length === 1 };
}

function migrate(req) {
  if (lossy.has("json")) return migrateLossy(req);
  const state = parseJSON(req.old_state.toString("utf8"));
  const outputs = (state[0] && state[0].outputs) || {};
  if (typeof outputs.conformFail === "string") throw new Error(outputs.conformFail);
  if (typeof outputs.conformReturn === "string") {
    const successors = Object.entries(outputs.conformSuccessors || {}).map(([key, value]) => ({ key, value }));
    return { new_state: Buffer.from(outputs.conformReturn, "utf8"), successors };
  }
  let changed = false;
  for (const r of state) {
    if (r.outputs && r.outputs.conformVersion instanceof JSONNumber && r.outputs.conformVersion.text === "1") {
      r.outputs.conformVersion = new JSONNumber("2");
      changed = true;
    }
  }
  return changed ? { new_state: Buffer.from(stringifyJSON(state), "utf8") } : {};
}

// migrateLossy is migrate with JavaScript's own JSON, which turns
// 9007199254740993 into 9007199254740992 and -0 into 0.
function migrateLossy(req) {
  const state = JSON.parse(req.old_state.toString("utf8"));
  let changed = false;
  for (const r of state) {
    if (r.outputs && r.outputs.conformVersion === 1) {
      r.outputs.conformVersion = 2;
      changed = true;
    }
  }
  return changed ? { new_state: Buffer.from(JSON.stringify(state), "utf8") } : {};
}

// ---- JSON that keeps numbers as their text (JSON.parse turns
// 9007199254740993 into 9007199254740992 and -0 into 0 on the way back). ----

class JSONNumber {
  constructor(text) {
    this.text = text;
  }
}

const number = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

function parseJSON(s) {
  let i = 0;
  const ws = () => {
    while (/\s/.test(s[i] || "")) i++;
  };
  const value = () => {
    ws();
    const c = s[i];
    if (c === "{") {
      i++;
      const o = {};
      ws();
      if (s[i] === "}") return i++, o;
      for (;;) {
        ws();
        const k = str();
        ws();
        if (s[i++] !== ":") throw new Error("JSON: expected ':' at " + i);
        o[k] = value();
        ws();
        if (s[i] === ",") { i++; continue; }
        if (s[i++] === "}") return o;
        throw new Error("JSON: expected ',' or '}' at " + i);
      }
    }
    if (c === "[") {
      i++;
      const a = [];
      ws();
      if (s[i] === "]") return i++, a;
      for (;;) {
        a.push(value());
        ws();
        if (s[i] === ",") { i++; continue; }
        if (s[i++] === "]") return a;
        throw new Error("JSON: expected ',' or ']' at " + i);
      }
    }
    if (c === '"') return str();
    number.lastIndex = i;
    const m = number.exec(s);
    if (m && m[0]) {
      i += m[0].length;
      return new JSONNumber(m[0]);
    }
    for (const [word, v] of [["true", true], ["false", false], ["null", null]]) {
      if (s.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    throw new Error("JSON: unexpected input at " + i);
  };
  const str = () => {
    if (s[i] !== '"') throw new Error("JSON: expected a string at " + i);
    let j = i + 1;
    while (j < s.length && s[j] !== '"') j += s[j] === "\\" ? 2 : 1;
    if (j >= s.length) throw new Error("JSON: unterminated string at " + i);
    const text = s.slice(i, j + 1);
    i = j + 1;
    return JSON.parse(text);
  };
  const v = value();
  ws();
  if (i !== s.length) throw new Error("JSON: trailing input at " + i);
  return v;
}

function stringifyJSON(v) {
  if (v instanceof JSONNumber) return v.text;
  if (Array.isArray(v)) return "[" + v.map(stringifyJSON).join(",") + "]";
  if (v && typeof v === "object") {
    return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + stringifyJSON(x)).join(",") + "}";
  }
  return JSON.stringify(v);
}

// ---- The kinds: request and response types, and how to answer. ----

const kinds = {
  transform: {
    req: T("TransformRequest"), res: T("TransformResponse"),
    answer(req, raw) {
      lose(req.properties);
      const res = this.res.encode(resourceTransform(req)).finish();
      return graftOptions(this.res, res, 2, T("TransformResourceOptions"), fieldBytes(raw, 6));
    },
  },
  "invoke transform": {
    req: T("TransformInvokeRequest"), res: T("TransformInvokeResponse"),
    answer(req, raw) {
      lose(req.args);
      const res = this.res.encode(invokeTransform(req)).finish();
      return graftOptions(this.res, res, 2, T("TransformInvokeOptions"), fieldBytes(raw, 3));
    },
  },
  "resource hook": {
    req: T("ResourceHookRequest"), res: T("ResourceHookResponse"),
    answer(req) {
      return this.res.encode(resourceHook(req)).finish();
    },
  },
  "error hook": {
    req: T("ErrorHookRequest"), res: T("ErrorHookResponse"),
    answer(req) {
      return this.res.encode(errorHook(req)).finish();
    },
  },
  "state migration": {
    req: T("StateMigrationRequest"), res: T("StateMigrationResponse"),
    answer(req) {
      return this.res.encode(migrate(req)).finish();
    },
  },
};

// graftOptions puts the request's unknown option fields back into the
// answer's options (field num of an encoded response of type resType).
function graftOptions(resType, res, num, optionsType, sentOptions) {
  if (!sentOptions) return res;
  const parts = fields(res).map((f) =>
    f.num === num && f.payload
      ? lengthDelimited(num, graft(optionsType, sentOptions, res.subarray(...f.payload)))
      : res.subarray(f.start, f.end));
  return Buffer.concat(parts);
}

// ---- The Callbacks service: one method, raw bytes in and out. ----

const callbacks = new Map(); // token -> kind name
const fail = (code, details) => Object.assign(new Error(details), { code, details });

function invoke(call, done) {
  try {
    let env;
    try {
      env = Envelope.decode(call.request);
    } catch (e) {
      throw fail(grpc.status.INVALID_ARGUMENT, "callbacks: the CallbackInvokeRequest does not decode: " + e.message);
    }
    const name = callbacks.get(env.token);
    if (!name) throw fail(grpc.status.NOT_FOUND, `callbacks: unknown callback token "${env.token}"`);
    const kind = kinds[name];
    let req;
    try {
      req = kind.req.decode(env.request);
      checkUTF8(kind.req, env.request);
    } catch (e) {
      throw fail(grpc.status.INVALID_ARGUMENT, `callbacks: ${name}: the request does not decode: ${e.message}`);
    }
    let response;
    try {
      response = lossy.has("empty") ? Buffer.alloc(0) : kind.answer(req, env.request);
    } catch (e) {
      throw fail(grpc.status.UNKNOWN, `${name}: ${e.message}`);
    }
    done(null, EnvelopeResponse.encode({ response }).finish());
  } catch (e) {
    done(e.code !== undefined ? e : fail(grpc.status.INTERNAL, String(e && e.message)));
  }
}

const raw = (b) => b;
const service = {
  Invoke: {
    path: "/pulumirpc.Callbacks/Invoke", requestStream: false, responseStream: false,
    requestSerialize: raw, requestDeserialize: raw, responseSerialize: raw, responseDeserialize: raw,
  },
};

// ---- The monitor: register, then SignalAndWaitForShutdown. ----

const packageDefinition = protoLoader.loadFileDescriptorSetFromBuffer(fds, { keepCase: true, defaults: false });
const pulumirpc = grpc.loadPackageDefinition(packageDefinition).pulumirpc;
const unary = (client, method, req) =>
  new Promise((resolve, reject) => client[method](req, (err, res) => (err ? reject(err) : resolve(res))));

async function main() {
  // gRPC's default 4 MiB receive limit is far below the 400 MiB the engine
  // sends.
  const limits = { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 };
  const server = new grpc.Server(limits);
  server.addService(service, { Invoke: invoke });
  const port = await new Promise((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
  const target = `127.0.0.1:${port}`;
  const monitor = new pulumirpc.ResourceMonitor(process.env.PULUMI_MONITOR, grpc.credentials.createInsecure(), limits);
  const callback = (name) => {
    const token = require("crypto").randomUUID();
    callbacks.set(token, name);
    // accepts_byte_string: the server sends strings back as it got them,
    // so it takes the byte-string envelope too.
    return { target, token, accepts_byte_string: true };
  };
  await unary(monitor, "RegisterStackTransform", callback("transform"));
  await unary(monitor, "RegisterStackInvokeTransform", callback("invoke transform"));
  await unary(monitor, "RegisterResourceHook", { name: "conform-hook", callback: callback("resource hook") });
  await unary(monitor, "RegisterErrorHook", { name: "conform-error-hook", callback: callback("error hook") });
  await unary(monitor, "RegisterResource", {
    type: "conform:index:Migrated", name: "migrated", custom: true,
    state_migrations: [callback("state migration")],
  });
  await unary(monitor, "SignalAndWaitForShutdown", {});
  server.forceShutdown();
  monitor.close();
}

main().catch((e) => {
  console.error("rawjs:", e.message);
  process.exit(1);
});
