import type { Command } from "commander";
import { stat } from "node:fs/promises";
import { homedir, hostname } from "node:os";
import { dirname, resolve } from "node:path";
import { holdsClusterDocument, loadClusterSpec } from "../config/cluster/load.js";
import { clusterDefaultsYAML } from "../config/cluster/print.js";
import { runnerPathReferences } from "../config/cluster/references.js";
import { ConfigError, decodeConfigDocuments } from "../config/load.js";
import { initDefaultsYAML, joinDefaultsYAML } from "../config/print.js";
import { validateConfigDocuments } from "../config/validate.js";
import { readInputFile, readInputFileSync } from "../remote/runner-files.js";

// `kubeforge config print init-defaults|join-defaults|cluster-defaults` and
// `kubeforge config validate` (a kubeadm file, as kubeadm config validate, or a Cluster file).

const PRINTABLE = "init-defaults, join-defaults or cluster-defaults";

/** Problems with the files a Cluster names on this machine (missing, or of the wrong kind). */
async function missingRunnerFiles(
  refs: ReturnType<typeof runnerPathReferences>,
  source: string,
): Promise<string[]> {
  const problems: string[] = [];
  for (const ref of refs) {
    try {
      const st = await stat(ref.path);
      const isDir = st.isDirectory();
      if (ref.kind === "directory" && !isDir) {
        problems.push(`${source}: ${ref.field}: ${ref.path} is not a directory`);
      } else if (ref.kind === "file" && isDir) {
        problems.push(`${source}: ${ref.field}: ${ref.path} is a directory, not a file`);
      }
    } catch (e) {
      problems.push(`${source}: ${ref.field}: cannot use ${ref.path}: ${(e as Error).message}`);
    }
  }
  return problems;
}

/** Validates a Cluster file as `kubeforge up` would read it, files it names included. */
async function validateClusterFile(text: string, file: string): Promise<void> {
  const spec = loadClusterSpec(text, file, {
    baseDir: dirname(resolve(file)),
    home: process.env.HOME || homedir(),
    readFile: (p) => readInputFileSync(p, "kubeadm.configFile"),
    warn: (m) => process.stderr.write(`[config] WARNING: ${m}\n`),
  });
  const problems = await missingRunnerFiles(runnerPathReferences(spec), file);
  if (problems.length > 0) throw new ConfigError(problems);
}

export function registerConfig(program: Command): void {
  const config = program
    .command("config")
    .description("kubeadm configuration files and kubeforge Cluster files");

  config
    .command("print")
    .description("Print kubeadm's default init or join configuration, or a default Cluster file")
    .argument("<kind>", PRINTABLE)
    .action((kind: string) => {
      if (kind === "init-defaults") process.stdout.write(initDefaultsYAML());
      else if (kind === "join-defaults")
        process.stdout.write(joinDefaultsYAML({ nodeName: hostname() }));
      else if (kind === "cluster-defaults") process.stdout.write(clusterDefaultsYAML());
      else throw new Error(`config print: unknown "${kind}": choose ${PRINTABLE}`);
    });

  config
    .command("validate")
    .description(
      "Validate a kubeadm configuration file strictly, as kubeadm config validate, or a kubeforge Cluster file",
    )
    .requiredOption("--config <file>", "the file to validate")
    .action(async (o: { config: string }) => {
      const text = await readInputFile(o.config, "--config file");
      if (holdsClusterDocument(text, o.config)) {
        await validateClusterFile(text, o.config);
      } else {
        const problems = validateConfigDocuments(decodeConfigDocuments(text, o.config));
        if (problems.length > 0) throw new ConfigError(problems);
      }
      process.stdout.write("ok\n");
    });
}
