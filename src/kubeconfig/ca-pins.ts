import { pemDecodeAll } from "../pki/pem.js";
import { certificateHash } from "../pki/pin.js";
import { currentEntries, decodeData } from "./parse.js";
import type { KubeConfig } from "./types.js";

// The CA pins a join command carries, taken as kubeadm's show-join-command takes them: every
// certificate in the current cluster's certificate-authority-data of admin.conf (not ca.crt,
// which may live in another certificatesDir, or be one of several CAs in the bundle).

/** Every CA certificate's pin ("sha256:<hex>"); throws naming `file` when it holds none. */
export function caPinsOf(config: KubeConfig, file: string): string[] {
  const { cluster } = currentEntries(config, file);
  const pem = decodeData(cluster["certificate-authority-data"]) ?? Buffer.alloc(0);
  const pins = pemDecodeAll(pem)
    .filter((b) => b.type === "CERTIFICATE")
    .map((b) => certificateHash(b.der));
  if (pins.length === 0) {
    throw new Error(`${file} holds no CA certificate to pin the join command to`);
  }
  return pins;
}
