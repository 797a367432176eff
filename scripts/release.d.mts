export function parseVersion(tag: string): [number, number, number];
export function changelogSection(changelog: string, tag: string): string;
export function checkPackageVersion(pkg: { version: string }, tag: string): void;
export function majorTagToMove(tag: string, existingTags: string[]): string | undefined;
