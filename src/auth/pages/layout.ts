import { html, type SafeHtml } from './html.js';
import { STYLESHEET_PATH } from './style.js';

export interface PageUser {
  name: string;
  isAdmin: boolean;
}

/** The frame of every page: head, site header with navigation, the content, a footer. */
export function layout(title: string, content: SafeHtml, user?: PageUser): SafeHtml {
  const nav = user
    ? html`<a href="/account">${user.name}</a>${user.isAdmin ? html`<a href="/admin">Admin</a>` : ''}`
    : html`<a href="/login">Sign in</a><a href="/register">Create account</a>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title} · Inkwell</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
<link rel="icon" href="data:,">
</head>
<body>
<header class="site"><a class="brand" href="/">Ink<span>well</span></a><nav>${nav}</nav></header>
<main>${content}</main>
<footer>Inkwell</footer>
</body>
</html>
`;
}

export function roleBadge(role: string): SafeHtml {
  const kind = role === 'admin' || role === 'editor' ? role : 'user';
  return html`<span class="badge ${kind}">${role}</span>`;
}
