import type { Command } from "commander";
import { readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { ConfigError, decodeConfigDocuments } from "../config/load.js";
import { initDefaultsYAML, joinDefaultsYAML } from "../config/print.js";
import { validateConfigDocuments } from "../config/validate.js";

// `kubeforge config print init-defaults|join-defaults` and `kubeforge config validate`.

export function registerConfig(program: Command): void {
  const config = program.command("config").description("kubeadm configuration files");

  config
    .command("print")
    .description("Print kubeadm's default configuration for init or join")
    .argument("<kind>", "init-defaults or join-defaults")
    .action((kind: string) => {
      if (kind === "init-defaults") process.stdout.write(initDefaultsYAML());
      else if (kind === "join-defaults")
        process.stdout.write(joinDefaultsYAML({ nodeName: hostname() }));
      else
        throw new Error(`config print: unknown "${kind}": choose init-defaults or join-defaults`);
    });

  config
    .command("validate")
    .description("Validate a kubeadm configuration file strictly, as kubeadm config validate")
    .requiredOption("--config <file>", "the file to validate")
    .action(async (o: { config: string }) => {
      let text: string;
      try {
        text = await readFile(o.config, "utf8");
      } catch (e) {
        throw new Error(`cannot read --config file ${o.config}: ${(e as Error).message}`, {
          cause: e,
        });
      }
      const problems = validateConfigDocuments(decodeConfigDocuments(text, o.config));
      if (problems.length > 0) throw new ConfigError(problems);
      process.stdout.write("ok\n");
    });
}
