// The image reference grammar of github.com/distribution/reference (regexp.go), which kubeadm's
// ValidateImageRepository matches "<imageRepository>/name:tag" against (ReferenceRegexp). The
// pieces are the grammar's own productions, so a registry with a port ("nexus.local:8122"), an
// IPv6 host in brackets and paths of several segments pass, and upper case in a path does not.

const ALPHANUMERIC = "[a-z0-9]+";
/** One period, one or two underscores, or any number of dashes. */
const SEPARATOR = "(?:[._]|__|[-]+)";
const DOMAIN_NAME_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const OPTIONAL_PORT = "(?::[0-9]+)?";
const TAG = "[\\w][\\w.-]{0,127}";
const DIGEST = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9A-Fa-f]{32,}";
/** Compressed or uncompressed IPv6 in brackets; zone identifiers are not allowed. */
const IPV6_ADDRESS = "\\[(?:[a-fA-F0-9:]+)\\]";
const DOMAIN_NAME = `${DOMAIN_NAME_COMPONENT}(?:\\.${DOMAIN_NAME_COMPONENT})*`;
const HOST = `(?:${DOMAIN_NAME}|${IPV6_ADDRESS})`;
const DOMAIN_AND_PORT = `${HOST}${OPTIONAL_PORT}`;
const PATH_COMPONENT = `${ALPHANUMERIC}(?:${SEPARATOR}${ALPHANUMERIC})*`;
const REMOTE_NAME = `${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`;
const NAME = `(?:${DOMAIN_AND_PORT}/)?${REMOTE_NAME}`;

/** distribution/reference ReferenceRegexp: name, optional ":tag", optional "@digest". */
export const REFERENCE = new RegExp(`^(${NAME})(?::(${TAG}))?(?:@(${DIGEST}))?$`);

/** Whether `text` is a full image reference ("registry.k8s.io/pause:3.10.1"). */
export function isImageReference(text: string): boolean {
  return REFERENCE.test(text);
}

/**
 * kubeadm's ValidateImageRepository: the repository is valid when "<repository>/name:tag" is an
 * image reference. Returns the problem, or undefined.
 */
export function imageRepositoryProblem(repository: string): string | undefined {
  if (isImageReference(`${repository}/name:tag`)) return undefined;
  return `${JSON.stringify(repository)} is not a valid image repository: "<repository>/<image>:<tag>" would not be an image reference (a registry host with an optional port, then lower-case path segments)`;
}
