// Checks of the admin API's connection settings, shared by the client and the worker's config.
// Messages name the variable and never contain its value.

/** Admin keys begin with `mint_`. Returns a problem description that never contains the key. */
export function checkAdminApiKey(key: string | undefined): string | null {
  if (key === undefined || key === '') return 'ADMIN_API_KEY is not set';
  if (!key.startsWith('mint_')) return 'ADMIN_API_KEY must begin with "mint_" (an admin key)';
  if (key.length < 6 || /\s/.test(key))
    return 'ADMIN_API_KEY is malformed (empty after "mint_" or contains whitespace)';
  return null;
}

export function checkHttpUrl(name: string, value: string | undefined): string | null {
  if (!value) return `${name} is not set`;
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${name} must be an http(s) URL`;
    if (url.username || url.password) return `${name} must not carry credentials`;
    return null;
  } catch {
    return `${name} is not a valid URL`;
  }
}
