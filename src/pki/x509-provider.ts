import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import { webcrypto } from "node:crypto";

// @peculiar/x509 builds and parses certificates; every signature and digest it needs goes
// through Node's native WebCrypto (OpenSSL), never through pure-JS crypto.
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
