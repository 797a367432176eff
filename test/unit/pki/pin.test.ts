import { describe, expect, it } from "vitest";
import { PinSet, caCertHash, certificateHash, parsePin } from "../../../src/pki/pin.js";
import { pemDecodeAll } from "../../../src/pki/pem.js";
import {
  TEST_CERT2_PEM as testCert2PEM,
  TEST_CERT_PEM as testCertPEM,
  TEST_CERT_PIN as expectedHash,
} from "./pubkeypin-fixtures.js";

const der = (pem: string) => pemDecodeAll(pem)[0]!.der;

describe("caCertHash (kubeadm pubkeypin.Hash)", () => {
  it("matches kubeadm's known answer", () => {
    expect(caCertHash(testCertPEM)).toBe(expectedHash);
    expect(certificateHash(der(testCertPEM))).toBe(expectedHash);
  });

  it("hashes the first certificate of a bundle", () => {
    expect(caCertHash(testCertPEM + "\n" + testCert2PEM)).toBe(expectedHash);
    expect(caCertHash(testCert2PEM)).not.toBe(expectedHash);
  });

  it("refuses text without a certificate", () => {
    expect(() => caCertHash("nothing here")).toThrow(/does not contain a PEM certificate/);
  });
});

describe("PinSet (kubeadm pubkeypin.Set, TestSet)", () => {
  it("behaves as kubeadm's TestSet", () => {
    const s = new PinSet();
    expect(s.isEmpty()).toBe(true);
    expect(() => s.allow("xyz")).toThrow(/expected "format:hex-value"/);
    expect(() => s.allow("0011223344")).toThrow();
    expect(() => s.allow(expectedHash + expectedHash)).toThrow();
    expect(s.isEmpty()).toBe(true);
    expect(() => s.checkAny([der(testCertPEM)])).toThrow(/are pinned/);
    s.allow(expectedHash.toUpperCase());
    expect(s.isEmpty()).toBe(false);
    expect(() => s.checkAny([der(testCertPEM)])).not.toThrow();
    expect(() => s.checkAny([der(testCert2PEM)])).toThrow(/none of the public keys/);
    expect(() => s.checkAny([der(testCert2PEM), der(testCertPEM)])).not.toThrow();
  });
});

describe("parsePin", () => {
  it.each([
    ["sha256:" + "ab".repeat(32), "ab".repeat(32)],
    ["SHA256:" + "AB".repeat(32), "ab".repeat(32)],
  ])("accepts %s", (pin, value) => {
    expect(parsePin(pin)).toBe(value);
  });

  it.each([
    ["md5:" + "ab".repeat(32), /unknown hash format "md5"/],
    ["sha256:" + "ab".repeat(31), /expected a 32 byte SHA-256 hash, found 31 bytes/],
    ["sha256:" + "zz".repeat(32), /could not decode SHA-256 from hex/],
    ["sha256:" + "a".repeat(65), /could not decode/],
    ["sha256:ab:cd", /expected "format:hex-value"/],
  ])("refuses %s", (pin, message) => {
    expect(() => parsePin(pin)).toThrow(message);
  });
});
