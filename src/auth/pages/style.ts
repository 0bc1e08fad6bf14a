/**
 * The pages' stylesheet, served from our own origin so the Content-Security-Policy
 * can be `style-src 'self'` with no inline styles at all.
 */
export const STYLESHEET_PATH = '/assets/inkwell.css';

export const STYLESHEET = `
:root {
  --ink: #1d2433; --muted: #5b6478; --line: #e3e6ee; --paper: #ffffff; --bg: #f4f5f9;
  --accent: #3b5bdb; --accent-dark: #2f4ac0; --danger-bg: #fff1f0; --danger: #b42318;
  color-scheme: light;
}
* { box-sizing: border-box; }
html { font-size: 16px; }
body {
  margin: 0; min-height: 100vh; background: var(--bg); color: var(--ink);
  font: 1rem/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  display: flex; flex-direction: column;
}
header.site {
  display: flex; align-items: center; justify-content: space-between;
  padding: 0.9rem 1.5rem; background: var(--paper); border-bottom: 1px solid var(--line);
}
header.site .brand { font-weight: 700; letter-spacing: 0.02em; color: var(--ink); text-decoration: none; }
header.site .brand span { color: var(--accent); }
header.site nav { display: flex; gap: 1rem; align-items: center; font-size: 0.95rem; }
a { color: var(--accent); }
main { flex: 1; display: flex; justify-content: center; align-items: flex-start; padding: 3rem 1rem; }
.card {
  width: 100%; max-width: 26rem; background: var(--paper); border: 1px solid var(--line);
  border-radius: 12px; padding: 2rem; box-shadow: 0 1px 2px rgba(16, 24, 40, 0.04), 0 8px 24px rgba(16, 24, 40, 0.06);
}
.card.wide { max-width: 52rem; }
h1 { font-size: 1.5rem; margin: 0 0 0.25rem; }
p.lead { color: var(--muted); margin: 0 0 1.5rem; }
form { display: grid; gap: 1rem; margin: 0; }
label { display: grid; gap: 0.35rem; font-weight: 600; font-size: 0.9rem; }
input[type=email], input[type=password], input[type=text] {
  font: inherit; padding: 0.6rem 0.75rem; border: 1px solid #cfd4df; border-radius: 8px; background: #fff;
}
input:focus { outline: 2px solid var(--accent); outline-offset: 1px; border-color: var(--accent); }
button {
  font: inherit; font-weight: 600; cursor: pointer; border-radius: 8px; padding: 0.65rem 1rem;
  border: 1px solid var(--accent); background: var(--accent); color: #fff;
}
button:hover { background: var(--accent-dark); }
button.secondary { background: #fff; color: var(--ink); border-color: #cfd4df; }
button.secondary:hover { background: var(--bg); }
button.link { background: none; border: none; color: var(--accent); padding: 0; font-weight: 500; }
.alert { background: var(--danger-bg); color: var(--danger); border: 1px solid #fecdca; border-radius: 8px; padding: 0.75rem 1rem; margin: 0 0 1rem; }
.divider { display: flex; align-items: center; gap: 0.75rem; color: var(--muted); font-size: 0.85rem; margin: 1.5rem 0 1rem; }
.divider::before, .divider::after { content: ""; flex: 1; border-top: 1px solid var(--line); }
.providers { display: grid; gap: 0.5rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.5rem 1.25rem; margin: 0 0 1.5rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 0.1rem 0.55rem; border-radius: 999px; font-size: 0.8rem; font-weight: 600; background: #eef2ff; color: var(--accent-dark); }
.badge.admin { background: #fef3f2; color: var(--danger); }
.badge.editor { background: #ecfdf3; color: #067647; }
table { width: 100%; border-collapse: collapse; font-size: 0.95rem; }
th, td { text-align: left; padding: 0.6rem 0.5rem; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
th { color: var(--muted); font-weight: 600; font-size: 0.85rem; text-transform: uppercase; letter-spacing: 0.04em; }
.hint { color: var(--muted); font-size: 0.85rem; font-weight: 400; margin: -0.5rem 0 0; }
span.hint { margin: 0; }
p.switch { margin: 1.5rem 0 0; color: var(--muted); font-size: 0.95rem; text-align: center; }
ul.links { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.6rem; }
ul.links a { font-weight: 600; }
.actions { display: flex; gap: 0.75rem; align-items: center; flex-wrap: wrap; }
.demo { margin: 1.5rem 0 0; padding-top: 1.25rem; border-top: 1px solid var(--line); }
.demo h2 { font-size: 1rem; margin: 0 0 0.25rem; }
.demo .hint { margin: 0 0 0.5rem; }
.demo ul { list-style: none; margin: 0; padding: 0; display: grid; gap: 0.3rem; font-size: 0.9rem; }
footer { text-align: center; color: var(--muted); font-size: 0.8rem; padding: 1.5rem; }
`;
