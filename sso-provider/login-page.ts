// The provider's sign-in form: plain HTML, no script, posted back to its own interaction URL.

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The form for interaction `uid`; after a refused attempt, the name typed and one error for both fields. */
export function loginPage(uid: string, retry?: { username: string; error: true }): string {
  const error = retry ? '<p role="alert">Wrong username or password</p>' : '';
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in: docs-admin</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>Sign in</h1>
${error}
<form method="post" action="/interaction/${escapeHtml(uid)}">
<p><label>Username <input name="username" autocomplete="username" required autofocus value="${escapeHtml(retry?.username ?? '')}"></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password" required></label></p>
<p><button type="submit">Sign in</button></p>
</form>
</body>
</html>
`;
}
