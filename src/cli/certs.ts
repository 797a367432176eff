import type { Command } from "commander";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_CERTIFICATES_DIR } from "../config/defaults.js";
import { generateCertificateKey } from "../pki/certificate-key.js";
import { caCertHash } from "../pki/pin.js";
import { generateBootstrapToken } from "../pki/token.js";

// Small generators and inspectors with kubeadm's output formats.

export function registerCerts(program: Command): void {
  const certs = program.command("certs").description("Certificates of a kubeadm cluster");

  certs
    .command("certificate-key")
    .description("Generate a certificate key for --upload-certs (64 hex characters)")
    .action(() => {
      process.stdout.write(`${generateCertificateKey()}\n`);
    });

  certs
    .command("ca-cert-hash")
    .description("Print the CA public key hash for --discovery-token-ca-cert-hash")
    .option("--cert-dir <dir>", "folder holding ca.crt", DEFAULT_CERTIFICATES_DIR)
    .action(async (o: { certDir: string }) => {
      const file = join(o.certDir, "ca.crt");
      let pem: Buffer;
      try {
        pem = await readFile(file);
      } catch (e) {
        throw new Error(`cannot read the CA certificate ${file}: ${(e as Error).message}`, {
          cause: e,
        });
      }
      process.stdout.write(`${caCertHash(pem)}\n`);
    });
}

export function registerToken(program: Command): void {
  program
    .command("token")
    .description("Bootstrap tokens")
    .command("generate")
    .description("Generate a random bootstrap token in kubeadm's format")
    .action(() => {
      process.stdout.write(`${generateBootstrapToken()}\n`);
    });
}
