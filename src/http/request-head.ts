/**
 * Request heads read off the raw socket by the front door (src/http/front-door.ts),
 * before node:http sees the bytes.
 *
 * Why so strict: the door and node:http read one byte stream. Should they ever disagree
 * on where a request ends and the next one begins — a bare LF taken as a line end by
 * one and not by the other, two Content-Lengths, Transfer-Encoding next to
 * Content-Length, a header hidden in an obs-fold — a client could make the door answer
 * bytes node would have read as a body, or pass node a "body" that node reads as a
 * request of its own: request smuggling. So this is not an HTTP/1.1 parser. It accepts
 * a small subset in which every byte has exactly one reading, the one llhttp (node's
 * parser, in its strict default mode) gives it too, and calls everything else
 * 'unsupported'; the caller then hands the connection, from that request on, to
 * node:http, whose rules alone apply. Rejecting too much costs a little speed;
 * accepting too much is a security bug. Checked against node's parser by
 * test/unit/request-head.test.ts.
 *
 * Beyond the framing, a head node:http would not treat as an ordinary request is left
 * to node:http as well:
 * - Only a few common methods: node turns a CONNECT connection into a tunnel, and answers
 *   a method llhttp does not know (or PRI) with 400.
 * - Host is required: node answers an HTTP/1.1 request without one with 400.
 * - Upgrade and Expect have node-specific handling ('upgrade' events, 100-continue, 417);
 *   llhttp reads Proxy-Connection as Connection; Connection may only be `keep-alive` or
 *   `close`. After a `close` request llhttp rejects any further byte on the connection,
 *   so the caller must not read past that request.
 * - `__proto__`, which node's `req.headers` leaves out; more than MAX_HEADERS headers,
 *   past node's `maxHeadersCount` of which it drops the rest.
 * - `maxHeadBytes` should stay below node's `maxHeaderSize` (16 KiB), or node answers
 *   431 to a head the door accepted.
 */

/** A request head the front door understands; offsets are into the buffer given to parseRequestHead. */
export interface RequestHead {
  method: string; // e.g. 'GET', 'POST' (as sent; must be a token of A-Z only)
  url: string; // the request-target as sent, e.g. '/graphql?query=...'
  /** Header names lower-cased; each name appears once (a repeated name makes the head unsupported). */
  headers: Record<string, string>;
  /** Offset of the first body byte (just after the CRLF CRLF). */
  bodyStart: number;
  /** From Content-Length; 0 when absent. */
  contentLength: number;
}

export type HeadResult = RequestHead | 'incomplete' | 'unsupported';

/** Methods llhttp knows in every version and frames like any request (not CONNECT, not PRI). */
const METHODS = ['GET', 'POST', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'PATCH'];
const MAX_METHOD_LENGTH = 16;
/** Far below node's `maxHeadersCount` (2000), past which `req.headers` silently lacks the rest. */
const MAX_HEADERS = 100;
/** Up to 999 999 999: no overflow anywhere, and far beyond any body the door reads. */
const MAX_CONTENT_LENGTH_DIGITS = 9;

const HTAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const SLASH = 0x2f;
const COLON = 0x3a;
/** What follows the request-target, byte for byte: no other version, no other spacing. */
const VERSION = Buffer.from(' HTTP/1.1\r\n', 'latin1');

// Byte classes, one table lookup per byte.
const UPPER = 1; // A-Z: methods
const TCHAR = 2; // RFC 9110 token: header names
const TARGET = 4; // visible ASCII: request-target
const FIELD = 8; // HTAB, SP, visible ASCII, obs-text: header values
const CLASS = new Uint8Array(256);
for (let c = 0x41; c <= 0x5a; c++) CLASS[c]! |= UPPER;
for (const ch of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") {
  CLASS[ch.charCodeAt(0)]! |= TCHAR;
}
for (let c = 0x21; c <= 0x7e; c++) CLASS[c]! |= TARGET | FIELD;
for (let c = 0x80; c <= 0xff; c++) CLASS[c]! |= FIELD;
CLASS[HTAB]! |= FIELD;
CLASS[SP]! |= FIELD;

/**
 * Where the header lines of the head being parsed are: per line, the offsets of name
 * start, name end, value start and value end (trimmed). The parse is synchronous, so one
 * array serves every call, and the head is decoded to a string once, not per field.
 */
const fields = new Int32Array(MAX_HEADERS * 4);

/**
 * Parses the head starting at `start` in `buf`. 'incomplete': no CRLFCRLF yet and fewer
 * than maxHeadBytes bytes since start. 'unsupported' as soon as the bytes seen so far
 * cannot begin a head of the subset, or none ends within maxHeadBytes.
 */
export function parseRequestHead(buf: Buffer, start: number, maxHeadBytes: number): HeadResult {
  if (!(start >= 0 && start <= buf.length)) throw new RangeError(`start ${start} outside the buffer`);
  // Reaching `end` means the bytes ran out: for now, or for good when the head is too long.
  const end = Math.min(buf.length, start + maxHeadBytes);
  const tooLong = buf.length - start >= maxHeadBytes;

  let i = start;
  while (i < end && CLASS[buf[i]!]! & UPPER) i++;
  if (i - start > MAX_METHOD_LENGTH) return 'unsupported';
  if (i === end) return tooLong ? 'unsupported' : 'incomplete';
  const method = buf[i] === SP ? knownMethod(buf, start, i) : undefined;
  if (method === undefined) return 'unsupported';

  const urlStart = ++i;
  if (i < end && buf[i] !== SLASH) return 'unsupported';
  while (i < end && CLASS[buf[i]!]! & TARGET) i++;
  const urlEnd = i;
  for (let k = 0; k < VERSION.length; k++, i++) {
    if (i === end) return tooLong ? 'unsupported' : 'incomplete';
    if (buf[i] !== VERSION[k]) return 'unsupported';
  }

  let count = 0;
  for (;;) {
    if (i === end) break;
    if (buf[i] === CR) {
      if (i + 1 === end) break;
      if (buf[i + 1] !== LF) return 'unsupported';
      return readFields(buf, start, i + 2, method, urlStart, urlEnd, count);
    }

    // A line that does not start with a token (obs-fold, a stray LF, whitespace before
    // the colon) is one llhttp reads otherwise, or rejects.
    const nameStart = i;
    while (i < end && CLASS[buf[i]!]! & TCHAR) i++;
    if (i === end) break;
    if (i === nameStart || buf[i] !== COLON) return 'unsupported';
    const nameEnd = i++;

    while (i < end && (buf[i] === SP || buf[i] === HTAB)) i++;
    const valueStart = i;
    while (i < end && CLASS[buf[i]!]! & FIELD) i++;
    if (i === end) break;
    // Any byte but CR ends the value wrongly: a bare LF, a CTL, DEL.
    if (buf[i] !== CR) return 'unsupported';
    let valueEnd = i;
    while (valueEnd > valueStart && (buf[valueEnd - 1] === SP || buf[valueEnd - 1] === HTAB)) valueEnd--;
    if (++i === end) break;
    if (buf[i++] !== LF) return 'unsupported';

    if (count === MAX_HEADERS) return 'unsupported';
    const f = count++ * 4;
    fields[f] = nameStart;
    fields[f + 1] = nameEnd;
    fields[f + 2] = valueStart;
    fields[f + 3] = valueEnd;
  }
  if (tooLong) return 'unsupported';
  // Out of bytes for now: the header lines complete so far may be refused already.
  return count === 0 ? 'incomplete' : readFields(buf, start, -1, method, urlStart, urlEnd, count);
}

/**
 * The head from its header lines (whose syntax is checked), or 'unsupported' for what
 * they say; bodyStart -1: the head is not complete yet, and at best 'incomplete'.
 */
function readFields(buf: Buffer, start: number, bodyStart: number, method: string, urlStart: number, urlEnd: number, count: number): HeadResult {
  const text = buf.toString('latin1', start, bodyStart < 0 ? fields[count * 4 - 1]! : bodyStart);
  const headers: Record<string, string> = Object.create(null);
  let contentLength = 0;
  for (let f = 0; f < count * 4; f += 4) {
    const valueStart = fields[f + 2]!;
    const valueEnd = fields[f + 3]!;
    const name = knownName(buf, fields[f]!, fields[f + 1]!) ?? text.slice(fields[f]! - start, fields[f + 1]! - start).toLowerCase();
    if (headers[name] !== undefined) return 'unsupported';
    const value = text.slice(valueStart - start, valueEnd - start);
    switch (name) {
      // llhttp reads these two values itself, and takes a HTAB after them as part of the
      // value: a Content-Length of `5\t` is an error, a `close\t` does not close.
      case 'content-length':
        contentLength = digits(buf, valueStart, valueEnd);
        if (contentLength < 0 || tabFollows(buf, valueEnd)) return 'unsupported';
        break;
      case 'connection': {
        const token = value.toLowerCase();
        if ((token !== 'keep-alive' && token !== 'close') || tabFollows(buf, valueEnd)) return 'unsupported';
        break;
      }
      case 'transfer-encoding':
      case 'upgrade':
      case 'expect':
      case 'proxy-connection':
      case '__proto__':
        return 'unsupported';
    }
    headers[name] = value;
  }
  if (bodyStart < 0) return 'incomplete';
  if (headers.host === undefined) return 'unsupported';
  return { method, url: text.slice(urlStart - start, urlEnd - start), headers, bodyStart, contentLength };
}

/**
 * Header names common in requests, lower-case. A name found here costs no new string,
 * and a property keyed by a new string costs V8 a look-up in its string table first:
 * together most of the time spent outside the byte scan.
 */
const KNOWN_NAMES = new Map<number, string>();
for (const name of [
  'host', 'user-agent', 'accept', 'accept-encoding', 'accept-language', 'content-type', 'content-length',
  'connection', 'keep-alive', 'cookie', 'authorization', 'origin', 'referer', 'cache-control', 'pragma',
  'dnt', 'te', 'priority', 'if-none-match', 'if-modified-since', 'upgrade-insecure-requests',
  'sec-fetch-dest', 'sec-fetch-mode', 'sec-fetch-site', 'sec-fetch-user', 'sec-ch-ua', 'sec-ch-ua-mobile',
  'sec-ch-ua-platform', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-real-ip', 'x-request-id',
  'apollo-require-preflight', 'x-apollo-operation-name', 'apollographql-client-name', 'apollographql-client-version',
  'transfer-encoding', 'upgrade', 'expect', 'proxy-connection',
]) {
  const bytes = Buffer.from(name, 'latin1');
  KNOWN_NAMES.set(nameHash(bytes, 0, bytes.length), name);
}

/** Case-insensitive for ASCII letters, as header names are. */
function nameHash(buf: Buffer, from: number, to: number): number {
  let h = to - from;
  for (let i = from; i < to; i++) h = (Math.imul(h, 31) + (buf[i]! | 0x20)) | 0;
  return h;
}

/** The lower-cased name in buf[from, to) if it is one of KNOWN_NAMES. */
function knownName(buf: Buffer, from: number, to: number): string | undefined {
  const name = KNOWN_NAMES.get(nameHash(buf, from, to));
  if (name === undefined || name.length !== to - from) return undefined;
  for (let k = 0; k < name.length; k++) {
    const c = buf[from + k]!;
    if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== name.charCodeAt(k)) return undefined;
  }
  return name;
}

/** The method in buf[from, to) as one of METHODS' strings, if it is one. */
function knownMethod(buf: Buffer, from: number, to: number): string | undefined {
  next: for (const method of METHODS) {
    if (method.length !== to - from) continue;
    for (let k = 0; k < method.length; k++) if (buf[from + k] !== method.charCodeAt(k)) continue next;
    return method;
  }
  return undefined;
}

/** Whether a HTAB is among the whitespace between a value's end and its line's CR. */
function tabFollows(buf: Buffer, valueEnd: number): boolean {
  for (let i = valueEnd; buf[i] !== CR; i++) if (buf[i] === HTAB) return true;
  return false;
}

/** The number written by 1 to MAX_CONTENT_LENGTH_DIGITS ASCII digits in buf[from, to); -1 for anything else. */
function digits(buf: Buffer, from: number, to: number): number {
  if (to === from || to - from > MAX_CONTENT_LENGTH_DIGITS) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}
