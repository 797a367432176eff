import { execFileSync } from "node:child_process";

// A CA pin as kubeadm's --discovery-token-ca-cert-hash takes it, computed by openssl rather than
// by kubeforge's code: SHA-256 of the certificate's DER SubjectPublicKeyInfo, in hex.

/** The hex SHA-256 of the public key of the PEM certificate `caFile`, as openssl computes it. */
export function opensslCAPin(caFile: string): string {
  const out = execFileSync(
    "sh",
    [
      "-c",
      'openssl x509 -pubkey -noout -in "$1" | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex',
      "sh",
      caFile,
    ],
    { encoding: "utf8" },
  );
  const hash = out.trim().split(" ").at(-1) ?? "";
  if (!/^[0-9a-f]{64}$/.test(hash)) {
    throw new Error(`openssl could not hash the CA public key of ${caFile}: ${out}`);
  }
  return hash;
}
