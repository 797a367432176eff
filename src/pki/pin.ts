import { createHash } from "node:crypto";
import { certificateParts } from "./der.js";
import { pemDecodeAll } from "./pem.js";

// CA public key pins in the style of RFC 7469, as kubeadm's discovery-token-ca-cert-hash
// (kubeadm: util/pubkeypin/pubkeypin.go): "sha256:" + hex SHA-256 of the certificate's
// DER SubjectPublicKeyInfo.

const FORMAT_SHA256 = "sha256";
const SUPPORTED_FORMATS = FORMAT_SHA256;

/** The pin of one DER certificate (kubeadm's pubkeypin.Hash). */
export function certificateHash(der: Uint8Array): string {
  const spki = certificateParts(der).subjectPublicKeyInfo;
  return `${FORMAT_SHA256}:${createHash("sha256").update(spki).digest("hex")}`;
}

/** The pin of the first certificate in a PEM file: what `kubeforge certs ca-cert-hash` prints. */
export function caCertHash(pem: string | Uint8Array): string {
  const block = pemDecodeAll(pem).find((b) => b.type === "CERTIFICATE");
  if (!block) throw new Error("the CA file does not contain a PEM certificate");
  return certificateHash(block.der);
}

/**
 * Validates one pin as pubkeypin.Set.Allow does and returns its lower-case hex value.
 * Throws a sentence saying what is wrong with it.
 */
export function parsePin(pin: string): string {
  const parts = pin.split(":");
  if (parts.length !== 2) {
    throw new Error(
      `invalid hash "${pin}", expected "format:hex-value". Known format(s) are: ${SUPPORTED_FORMATS}`,
    );
  }
  const [format, value] = parts as [string, string];
  if (format.toLowerCase() !== FORMAT_SHA256) {
    throw new Error(`unknown hash format "${format}". Known format(s) are: ${SUPPORTED_FORMATS}`);
  }
  // Go's hex.DecodedLen(len) must be 32 bytes; the value must then decode as hex.
  const decodedLength = Math.floor(value.length / 2);
  if (decodedLength !== 32) {
    throw new Error(
      `invalid hash "${pin}", expected a 32 byte SHA-256 hash, found ${decodedLength} bytes`,
    );
  }
  if (!/^[0-9a-fA-F]*$/.test(value) || value.length % 2 !== 0) {
    throw new Error(`invalid hash "${pin}", could not decode SHA-256 from hex`);
  }
  return value.toLowerCase();
}

/** A set of pinned public keys (kubeadm's pubkeypin.Set). */
export class PinSet {
  private readonly sha256 = new Set<string>();

  /** Adds pins; throws on the first invalid one, leaving the set as it was before it. */
  allow(...pins: string[]): void {
    for (const pin of pins) this.sha256.add(parsePin(pin));
  }

  isEmpty(): boolean {
    return this.sha256.size === 0;
  }

  /** Succeeds when at least one certificate (DER) has a pinned key; else throws listing their pins. */
  checkAny(certificates: readonly Uint8Array[]): void {
    const seen: string[] = [];
    for (const der of certificates) {
      const pin = certificateHash(der);
      if (this.sha256.has(pin.slice(FORMAT_SHA256.length + 1))) return;
      seen.push(pin);
    }
    throw new Error(`none of the public keys "${seen.join(":")}" are pinned`);
  }
}
