import type { EncryptionAlgorithm } from "../../src/config/types.js";
import type { KeyPair, KeySource } from "../../src/pki/key-source.js";
import { KeyPool } from "../../src/pki/keys.js";

/** A KeyPool that records what it is asked for: each prefetch's count, and the keys taken. */
export class CountingKeys implements KeySource {
  /** The count of each prefetch, in order. */
  readonly prefetches: number[] = [];
  taken = 0;
  private readonly pool = new KeyPool();

  /** Keys prefetched in all. */
  get prefetched(): number {
    return this.prefetches.reduce((a, b) => a + b, 0);
  }

  prefetch(algorithm: EncryptionAlgorithm, count: number): void {
    this.prefetches.push(count);
    this.pool.prefetch(algorithm, count);
  }

  take(algorithm: EncryptionAlgorithm): Promise<KeyPair> {
    this.taken++;
    return this.pool.take(algorithm);
  }

  discard(): void {
    this.pool.discard();
  }
}
