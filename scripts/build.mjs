import { build } from "esbuild";
import { chmod } from "node:fs/promises";
import { buildOptions } from "./build-options.mjs";

const outdir = process.argv[2] ?? "dist";
await build(buildOptions(outdir));
await chmod(`${outdir}/cli.js`, 0o755);
