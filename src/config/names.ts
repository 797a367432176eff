// Name checks of apimachinery's validation package (k8s.io/apimachinery/pkg/util/validation
// validation.go): the RFC 1123 subdomain kubeadm wants for hosts, node names and DNS domains,
// the wildcard form certificate SANs may also take, and qualified names (label and taint keys,
// kubeadm's HostnameCheck). The error-list forms return apimachinery's own messages; the
// boolean forms are for callers that word the problem themselves.

const QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX = 63;
const DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1123_SUBDOMAIN_ERR =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MAX = 253;

const QUALIFIED_NAME = new RegExp(`^${QUALIFIED_NAME_FMT}$`);
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);

/** validation.RegexError: "<msg> (e.g. 'a',  or 'b', regex used for validation is '<fmt>')". */
function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  const shown = examples.map((e) => `'${e}', `).join(" or ");
  return `${msg} (e.g. ${shown}regex used for validation is '${fmt}')`;
}

const maxLenError = (n: number) => `must be no more than ${n} characters`;
const EMPTY_ERROR = "must be non-empty";

/** validation.IsDNS1123Subdomain: the problems with `value`; [] when it is valid. */
export function dns1123SubdomainErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123_SUBDOMAIN_MAX) errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX));
  if (!DNS1123_SUBDOMAIN.test(value)) {
    errs.push(regexError(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"));
  }
  return errs;
}

/** Lower-case RFC 1123 labels joined by dots, at most 253 characters. */
export function isDNS1123Subdomain(value: string): boolean {
  return value.length <= DNS1123_SUBDOMAIN_MAX && DNS1123_SUBDOMAIN.test(value);
}

/** validation.IsWildcardDNS1123Subdomain: "*." followed by a DNS-1123 subdomain. */
export function isWildcardDNS1123Subdomain(value: string): boolean {
  return (
    value.length <= DNS1123_SUBDOMAIN_MAX &&
    value.startsWith("*.") &&
    DNS1123_SUBDOMAIN.test(value.slice(2))
  );
}

/** validation.IsQualifiedName ("[prefix/]name"): the problems with `value`; [] when valid. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split("/");
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? "";
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? "";
    name = parts[1] ?? "";
    if (prefix.length === 0) errs.push(`prefix part ${EMPTY_ERROR}`);
    else errs.push(...dns1123SubdomainErrors(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      `a qualified name ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push(`name part ${EMPTY_ERROR}`);
  else if (name.length > QUALIFIED_NAME_MAX)
    errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX)}`);
  if (!QUALIFIED_NAME.test(name)) {
    errs.push(
      `name part ${regexError(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")}`,
    );
  }
  return errs;
}
