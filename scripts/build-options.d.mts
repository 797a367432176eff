import type { BuildOptions } from "esbuild";

export const MIN_NODE_MAJOR: number;
export const CHUNKS_DIR: string;
export const entryPoints: Record<"cli" | "main" | "post", string>;
export function buildOptions(outdir: string): BuildOptions;
