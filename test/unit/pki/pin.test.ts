import { describe, expect, it } from "vitest";
import { PinSet, caCertHash, certificateHash, parsePin } from "../../../src/pki/pin.js";
import { pemDecodeAll } from "../../../src/pki/pem.js";

// Known answers from kubeadm's util/pubkeypin/pubkeypin_test.go: a self-signed certificate
// made with the openssl CLI and the hash kubeadm (and openssl) compute for it.
const testCertPEM = `
-----BEGIN CERTIFICATE-----
MIIDRDCCAiygAwIBAgIJAJgVaCXvC6HkMA0GCSqGSIb3DQEBBQUAMB8xHTAbBgNV
BAMTFGt1YmVhZG0ta2V5cGlucy10ZXN0MCAXDTE3MDcwNTE3NDMxMFoYDzIxMTcw
NjExMTc0MzEwWjAfMR0wGwYDVQQDExRrdWJlYWRtLWtleXBpbnMtdGVzdDCCASIw
DQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAK0ba8mHU9UtYlzM1Own2Fk/XGjR
J4uJQvSeGLtz1hID1IA0dLwruvgLCPadXEOw/f/IWIWcmT+ZmvIHZKa/woq2iHi5
+HLhXs7aG4tjKGLYhag1hLjBI7icqV7ovkjdGAt9pWkxEzhIYClFMXDjKpMSynu+
YX6nZ9tic1cOkHmx2yiZdMkuriRQnpTOa7bb03OC1VfGl7gHlOAIYaj4539WCOr8
+ACTUMJUFEHcRZ2o8a/v6F9GMK+7SC8SJUI+GuroXqlMAdhEv4lX5Co52enYaClN
+D9FJLRpBv2YfiCQdJRaiTvCBSxEFz6BN+PtP5l2Hs703ZWEkOqCByM6HV8CAwEA
AaOBgDB+MB0GA1UdDgQWBBRQgUX8MhK2rWBWQiPHWcKzoWDH5DBPBgNVHSMESDBG
gBRQgUX8MhK2rWBWQiPHWcKzoWDH5KEjpCEwHzEdMBsGA1UEAxMUa3ViZWFkbS1r
ZXlwaW5zLXRlc3SCCQCYFWgl7wuh5DAMBgNVHRMEBTADAQH/MA0GCSqGSIb3DQEB
BQUAA4IBAQCaAUif7Pfx3X0F08cxhx8/Hdx4jcJw6MCq6iq6rsXM32ge43t8OHKC
pJW08dk58a3O1YQSMMvD6GJDAiAfXzfwcwY6j258b1ZlI9Ag0VokvhMl/XfdCsdh
AWImnL1t4hvU5jLaImUUMlYxMcSfHBGAm7WJIZ2LdEfg6YWfZh+WGbg1W7uxLxk6
y4h5rWdNnzBHWAGf7zJ0oEDV6W6RSwNXtC0JNnLaeIUm/6xdSddJlQPwUv8YH4jX
c1vuFqTnJBPcb7W//R/GI2Paicm1cmns9NLnPR35exHxFTy+D1yxmGokpoPMdife
aH+sfuxT8xeTPb3kjzF9eJTlnEquUDLM
-----END CERTIFICATE-----`;
const expectedHash = "sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3";

const testCert2PEM = `
-----BEGIN CERTIFICATE-----
MIID9jCCAt6gAwIBAgIJAN5MXZDic7qYMA0GCSqGSIb3DQEBBQUAMFkxCzAJBgNV
BAYTAkFVMRMwEQYDVQQIEwpTb21lLVN0YXRlMSEwHwYDVQQKExhJbnRlcm5ldCBX
aWRnaXRzIFB0eSBMdGQxEjAQBgNVBAMTCXRlc3RDZXJ0MjAgFw0xNzA3MjQxNjA0
MDFaGA8yMTE3MDYzMDE2MDQwMVowWTELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNv
bWUtU3RhdGUxITAfBgNVBAoTGEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDESMBAG
A1UEAxMJdGVzdENlcnQyMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA
0brwpJYN2ytPWzRBtZSVc3dhkQlA59AzxzqeLLkano0Pxo9NIc3T/y58nnRI8uaS
I1P7BzUfJTiUEvmAtX8NggqKK4ld/gPrU+IRww1CUYS4KCkA/0d0ctPy0JwBCjD+
b57G3rmNE8c+0jns6J96ZzNtqmv6N+ZlFBAXm1p4S+k0kGi5+hoQ6H7SYXjk2lG+
r/8jPQEjy/NSdw1dcCA0Nc6o+hPr32927dS6J9KOhBeXNYUNdbuDDmroM9/gN2e/
YMSA1olLeDPQ7Xvhk0PIyEDnHh83AffPCx5yM3htVRGddjIsPAVUJEL3z5leJtxe
fzyPghOhHJY0PXqznDQTcwIDAQABo4G+MIG7MB0GA1UdDgQWBBRP0IJqv/5rQ4Uf
SByl77dJeEapRDCBiwYDVR0jBIGDMIGAgBRP0IJqv/5rQ4UfSByl77dJeEapRKFd
pFswWTELMAkGA1UEBhMCQVUxEzARBgNVBAgTClNvbWUtU3RhdGUxITAfBgNVBAoT
GEludGVybmV0IFdpZGdpdHMgUHR5IEx0ZDESMBAGA1UEAxMJdGVzdENlcnQyggkA
3kxdkOJzupgwDAYDVR0TBAUwAwEB/zANBgkqhkiG9w0BAQUFAAOCAQEA0RIMHc10
wHHPMh9UflqBgDMF7gfbOL0juJfGloAOcohWWfMZBBJ0CQKMy3xRyoK3HmbW1eeb
iATjesw7t4VEAwf7mgKAd+eTfWYB952uq5qYJ2TI28mSofEq1Wz3RmrNkC1KCBs1
u+YMFGwyl6necV9zKCeiju4jeovI1GA38TvH7MgYln6vMJ+FbgOXj7XCpek7dQiY
KGaeSSH218mGNQaWRQw2Sm3W6cFdANoCJUph4w18s7gjtFpfV63s80hXRps+vEyv
jEQMEQpG8Ss7HGJLGLBw/xAmG0e//XS/o2dDonbGbvzToFByz8OGxjMhk6yV6hdd
+iyvsLAw/MYMSA==
-----END CERTIFICATE-----
`;

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
