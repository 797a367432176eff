import { createSecretKey } from "node:crypto";

// Without its optional native add-on (left out of the bundle), ssh2 makes a new Node cipher for
// every AES-GCM packet, and a new HMAC for every packet of the other ciphers, each from the key
// as bytes; Node then imports those bytes into a key object on every call, most of the call's
// cost: on Node 24 an AES-128-GCM packet of 96 bytes took 19 µs from bytes and 5 µs from a
// KeyObject, an HMAC-SHA-256 one 20 µs and 6 µs. A command costs a dozen packets or so (the
// upgrade bench's CLI sends about 2,700 in a round, and receives more). ssh2 keeps each
// direction's cipher on its protocol object (`_cipher`, `_decipher`), replaced at every key
// exchange: each one set there gets its keys as KeyObjects, which createCipheriv,
// createDecipheriv and createHmac take as they take bytes. Fields ssh2 does not have are left
// alone (a later ssh2 only loses the speed).

/** The per-packet key fields of ssh2's native ciphers (lib/protocol/crypto.js). */
const PER_PACKET_KEYS = ["_encKey", "_decipherKey", "_macKey"] as const;

function keysAsObjects(cipher: unknown): void {
  if (typeof cipher !== "object" || cipher === null) return;
  const fields = cipher as Record<string, unknown>;
  for (const name of PER_PACKET_KEYS) {
    const key = fields[name];
    if (Buffer.isBuffer(key) && key.length > 0) fields[name] = createSecretKey(key);
  }
}

/**
 * From now on, every cipher the client's protocol gets (at the first key exchange and each
 * rekeying) keeps its per-packet keys as KeyObjects. Call right after `client.connect()`, which
 * makes the protocol object. False when the client has none (nothing changed).
 */
export function cipherKeysAsObjects(client: object): boolean {
  const protocol = (client as { _protocol?: unknown })._protocol;
  if (typeof protocol !== "object" || protocol === null) return false;
  for (const field of ["_cipher", "_decipher"]) {
    let cipher: unknown = (protocol as Record<string, unknown>)[field];
    keysAsObjects(cipher);
    Object.defineProperty(protocol, field, {
      configurable: true,
      enumerable: true,
      get: () => cipher,
      set: (next: unknown) => {
        keysAsObjects(next);
        cipher = next;
      },
    });
  }
  return true;
}
