import type { KeyObject } from "node:crypto";
import type { EncryptionAlgorithm } from "../config/types.js";

export interface KeyPair {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/**
 * Where phases get new private keys. Key generation dominates the certs and kubeconfig phases;
 * a parent phase that knows how many keys its children will need prefetches them so they are
 * generated in parallel on every core, while the children still run (and log) in kubeadm's order.
 */
export interface KeySource {
  /** Starts generating `count` keys in the background. */
  prefetch(algorithm: EncryptionAlgorithm, count: number): void;
  /** A fresh key pair: a prefetched one when one is ready or pending, else a new one. */
  take(algorithm: EncryptionAlgorithm): Promise<KeyPair>;
  /** Drops prefetched keys nobody took, so a failed run does not wait for them. */
  discard(): void;
}
