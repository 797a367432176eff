import type { Metafile } from "esbuild";

export function filesUnder(dir: string): Promise<string[]>;
export function buildDist(outdir: string): Promise<Metafile>;
