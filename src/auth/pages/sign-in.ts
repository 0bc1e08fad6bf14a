import type { FastifyInstance } from 'fastify';
import { LOGIN_EMAIL_COOKIE } from '../cookies.js';
import { RegistrationError } from '../credentials.js';
import { bodyOf, field, isForm, unsupportedMediaType } from '../routes/http.js';
import type { AuthService } from '../service.js';
import { demoAccounts } from './demo-accounts.js';
import { html, type SafeHtml } from './html.js';
import { DEFAULT_LANDING, withCallback, type PageKit } from './kit.js';
import { layout } from './layout.js';

/**
 * The signed-out pages: /login (email and password, one button per provider, and outside
 * production the demo accounts: ./demo-accounts.ts) and
 * /register (name, email, password; posts back to /register, which signs the new
 * account in and goes on to callbackUrl, or shows the form again with the typed name
 * and email — never the password — and what was wrong). Each links to the other.
 */

const ERROR_MESSAGES: Record<string, string> = {
  CredentialsSignin: 'That email and password did not match an account. Please try again.',
  TooManyRequests: 'Too many failed sign-in attempts for this account. Please wait a few minutes and try again.',
  OAuthSignin: 'Signing in with that provider could not be started. Please try again later.',
  OAuthCallback: 'Signing in with the provider did not complete. Please try again.',
  OAuthAccountNotLinked: 'An account with this email already exists. Sign in with your password to use it.',
  AccessDenied: 'The provider did not allow the sign-in.',
};

const EXPIRED_FORM = 'This form has expired. Please fill it in again.';
const EMAIL_TAKEN = 'An account with this email already exists.';

interface RegisterForm {
  csrfToken: string;
  callbackUrl: string;
  name?: string;
  email?: string;
  message?: string;
  /** The address is taken: offer the sign-in page. */
  taken?: boolean;
}

export async function signInPages(app: FastifyInstance, auth: AuthService, kit: PageKit): Promise<void> {
  app.get<{ Querystring: Record<string, unknown> }>('/login', async (request, reply) => {
    const callbackUrl = auth.callbackUrl(request.query.callbackUrl, DEFAULT_LANDING);
    const identity = await kit.visitor(request, reply);
    if (identity.session) return reply.redirect(callbackUrl, 302);

    // The email of the sign-in that just failed (src/auth/routes/credentials.ts), shown once.
    const kept = request.cookies[LOGIN_EMAIL_COOKIE];
    if (kept !== undefined) auth.cookies.clearLoginEmail(reply);
    const email = kept && kept.length <= 320 ? kept : undefined;

    const csrfToken = auth.csrfToken(request, reply);
    const code = typeof request.query.error === 'string' ? request.query.error : undefined;
    const message = code ? (ERROR_MESSAGES[code] ?? 'Sign-in failed. Please try again.') : undefined;
    const hidden = hiddenFields(csrfToken, callbackUrl);
    const providers = [...auth.providers.values()].map(
      (p) => html`<form method="post" action="/api/auth/signin/${p.id}">${hidden}<button class="secondary" type="submit">Continue with ${p.name}</button></form>`,
    );
    const content = html`<section class="card">
<h1>Sign in</h1>
<p class="lead">Welcome back to Inkwell.</p>
${message ? html`<p class="alert" role="alert">${message}</p>` : ''}
<form method="post" action="/api/auth/callback/credentials">
${hidden}
<label>Email <input type="email" name="email" autocomplete="username" required${email ? html` value="${email}"` : html` autofocus`}></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required${email ? html` autofocus` : ''}></label>
<button type="submit">Sign in</button>
</form>
${providers.length > 0 ? html`<div class="divider">or</div><div class="providers">${providers}</div>` : ''}
<p class="switch">New to Inkwell? <a href="${withCallback('/register', callbackUrl)}">Create an account</a></p>
${await demoAccounts(auth)}
</section>`;
    return kit.send(reply, layout('Sign in', content));
  });

  app.get<{ Querystring: Record<string, unknown> }>('/register', async (request, reply) => {
    const callbackUrl = auth.callbackUrl(request.query.callbackUrl, DEFAULT_LANDING);
    const identity = await kit.visitor(request, reply);
    if (identity.session) return reply.redirect(callbackUrl, 302);
    return kit.send(reply, registerPage({ csrfToken: auth.csrfToken(request, reply), callbackUrl }));
  });

  app.post('/register', async (request, reply) => {
    if (!isForm(request)) return unsupportedMediaType(reply, 'application/x-www-form-urlencoded');
    const body = bodyOf(request);
    const callbackUrl = auth.callbackUrl(field(body, 'callbackUrl'), DEFAULT_LANDING);
    if (!auth.checkCsrf(request, field(body, 'csrfToken'))) {
      // Most often a browser restarted since the form was shown: a fresh form, nothing echoed.
      return kit.send(reply, registerPage({ csrfToken: auth.csrfToken(request, reply), callbackUrl, message: EXPIRED_FORM }), 403);
    }
    const name = field(body, 'name') ?? '';
    const email = field(body, 'email') ?? '';
    let user;
    try {
      user = await auth.credentials.register({ name, email, password: field(body, 'password') ?? '' });
    } catch (err) {
      if (!(err instanceof RegistrationError)) throw err;
      const taken = err.status === 409;
      const message = taken ? EMAIL_TAKEN : sentence(err.message);
      return kit.send(reply, registerPage({ csrfToken: auth.csrfToken(request, reply), callbackUrl, name, email, message, taken }), err.status);
    }
    auth.cookies.setSession(reply, await auth.startSession(user));
    return reply.redirect(callbackUrl, 302);
  });
}

function registerPage(form: RegisterForm): SafeHtml {
  const signIn = withCallback('/login', form.callbackUrl);
  const content = html`<section class="card">
<h1>Create an account</h1>
<p class="lead">Join Inkwell to write posts and react to others.</p>
${form.message ? html`<p class="alert" role="alert">${form.message}${form.taken ? html` <a href="${signIn}">Sign in instead</a>.` : ''}</p>` : ''}
<form method="post" action="/register">
${hiddenFields(form.csrfToken, form.callbackUrl)}
<label>Name <input type="text" name="name" autocomplete="name" maxlength="100" required value="${form.name ?? ''}"${form.name ? '' : html` autofocus`}></label>
<label>Email <input type="email" name="email" autocomplete="email" required value="${form.email ?? ''}"></label>
<label>Password <input type="password" name="password" autocomplete="new-password" minlength="8" required aria-describedby="password-hint"${form.name ? html` autofocus` : ''}></label>
<p class="hint" id="password-hint">At least 8 characters.</p>
<button type="submit">Create account</button>
</form>
<p class="switch">Already have an account? <a href="${signIn}">Sign in</a></p>
</section>`;
  return layout('Create an account', content);
}

function hiddenFields(csrfToken: string, callbackUrl: string): SafeHtml {
  return html`<input type="hidden" name="csrfToken" value="${csrfToken}"><input type="hidden" name="callbackUrl" value="${callbackUrl}">`;
}

/** "password must be at least 8 characters" → "Password must be at least 8 characters." */
function sentence(message: string): string {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
