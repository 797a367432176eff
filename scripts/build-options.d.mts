import type { BuildOptions } from "esbuild";

export const entryPoints: Record<"cli" | "main" | "post", string>;
export function buildOptions(outdir: string): BuildOptions;
