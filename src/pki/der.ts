// A minimal DER walker: just enough to take the exact bytes Go hashes or copies
// (RawSubjectPublicKeyInfo for CA pins, RawSubject for an issuer, the key bits for a
// SubjectKeyId) without re-encoding them through an ASN.1 library.

export interface TLV {
  tag: number;
  /** Offset of the tag byte. */
  start: number;
  /** Offset of the first content byte. */
  contentStart: number;
  /** Offset just past the content. */
  end: number;
}

export function readTLV(buf: Uint8Array, offset: number): TLV {
  if (offset + 2 > buf.length) throw new Error("truncated DER element");
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new Error("multi-byte DER tags are not supported");
  let length = buf[offset + 1]!;
  let contentStart = offset + 2;
  if (length & 0x80) {
    const n = length & 0x7f;
    if (n === 0 || n > 4) throw new Error("unsupported DER length");
    length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + buf[contentStart + i]!;
    contentStart += n;
  }
  const end = contentStart + length;
  if (end > buf.length) throw new Error("truncated DER element");
  return { tag, start: offset, contentStart, end };
}

/** The elements directly inside a constructed element. */
export function childrenOf(buf: Uint8Array, parent: TLV): TLV[] {
  const out: TLV[] = [];
  for (let at = parent.contentStart; at < parent.end;) {
    const child = readTLV(buf, at);
    out.push(child);
    at = child.end;
  }
  return out;
}

export interface CertificateParts {
  /** DER of the issuer Name, as Go's RawIssuer. */
  issuer: Buffer;
  /** DER of the subject Name, as Go's RawSubject. */
  subject: Buffer;
  /** DER of SubjectPublicKeyInfo, as Go's RawSubjectPublicKeyInfo. */
  subjectPublicKeyInfo: Buffer;
}

/** Splits an X.509 certificate (RFC 5280 §4.1) into the raw parts Go keeps. */
export function certificateParts(der: Uint8Array): CertificateParts {
  const buf = Buffer.from(der.buffer, der.byteOffset, der.byteLength);
  const cert = readTLV(buf, 0);
  const tbs = childrenOf(buf, cert)[0];
  if (!tbs) throw new Error("not an X.509 certificate");
  const fields = childrenOf(buf, tbs);
  // [0] EXPLICIT version is optional; after it: serial, signature, issuer, validity, subject, spki.
  const first = fields[0]?.tag === 0xa0 ? 1 : 0;
  const issuer = fields[first + 2];
  const subject = fields[first + 4];
  const spki = fields[first + 5];
  if (!issuer || !subject || !spki) throw new Error("not an X.509 certificate");
  const slice = (t: TLV) => Buffer.from(buf.subarray(t.start, t.end));
  return { issuer: slice(issuer), subject: slice(subject), subjectPublicKeyInfo: slice(spki) };
}

/** The subjectPublicKey BIT STRING contents (without the unused-bits byte) of an SPKI. */
export function subjectPublicKeyBits(spki: Uint8Array): Buffer {
  const buf = Buffer.from(spki.buffer, spki.byteOffset, spki.byteLength);
  const bits = childrenOf(buf, readTLV(buf, 0))[1];
  if (!bits || bits.tag !== 0x03) throw new Error("not a SubjectPublicKeyInfo");
  return Buffer.from(buf.subarray(bits.contentStart + 1, bits.end));
}
