/**
 * Shape check of a MongoDB connection string given at launch. It never echoes any part of the
 * string (credentials), only what is wrong, so the message is safe for a terminal or a log.
 * Deeper checks (DNS for +srv, authentication) happen when the driver connects.
 */
const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._%~-]+)(?::(\d+))?$/;

export function connectionStringProblem(uri: string): string | null {
  const match = /^(mongodb(?:\+srv)?):\/\/([\s\S]*)$/.exec(uri);
  if (!match) return 'must start with mongodb:// or mongodb+srv://';
  const [, scheme, tail] = match;
  if (/\s/.test(tail)) return 'must not contain whitespace';
  const at = tail.lastIndexOf('@');
  if (at >= 0) {
    const userInfo = tail.slice(0, at);
    if (/[@/?#]/.test(userInfo) || userInfo.split(':').length > 2) {
      return 'has unescaped characters in its credentials (percent-encode @ : / ? # in the user name and password)';
    }
    if (userInfo.split(':')[0] === '') return 'has credentials with an empty user name';
  }
  const rest = tail.slice(at + 1);
  const hostsEnd = rest.search(/[/?]/);
  const hosts = hostsEnd < 0 ? rest : rest.slice(0, hostsEnd);
  if (hosts === '') return 'names no host';
  for (const [index, host] of hosts.split(',').entries()) {
    const parsed = HOST.exec(host);
    if (!parsed) return `has an invalid host (host ${index + 1})`;
    const port = parsed[2] === undefined ? undefined : Number(parsed[2]);
    if (port !== undefined && (port < 1 || port > 65535))
      return `has an invalid port (host ${index + 1})`;
    if (scheme === 'mongodb+srv' && port !== undefined)
      return 'must not give a port with mongodb+srv://';
  }
  if (scheme === 'mongodb+srv' && hosts.includes(','))
    return 'must name exactly one host with mongodb+srv://';
  const query = rest.includes('?') ? rest.slice(rest.indexOf('?') + 1) : '';
  if (query !== '' && query.split('&').some((pair) => !/^[^=]+=[^=]*$/.test(pair))) {
    return 'has a malformed option (options are name=value pairs joined by &)';
  }
  return null;
}
