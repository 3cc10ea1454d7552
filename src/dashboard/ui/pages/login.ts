// Sign-in form: POST /login with username and password; shows why the last session ended.
import { field, h } from '../dom.ts';
import type { Session } from '../session.ts';

export interface LoginMessage {
  text: string;
  /** warn: the session ended without the user asking (expired, revoked). */
  tone: 'info' | 'warn';
}

export function loginPage(session: Session, message: LoginMessage | null, onSignedIn: () => void): HTMLElement {
  const user = field('Username', h('input', { name: 'username', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' }));
  const pass = field('Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true }));
  const info = h('p', { class: message?.tone === 'warn' ? 'notice warn' : 'notice', role: 'status', hidden: !message }, message?.text ?? '');
  const error = h('p', { class: 'error-box', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'wide' }, 'Sign in');
  const form = h('form', { class: 'login card', 'aria-labelledby': 'login-h', novalidate: true }, h('h1', { id: 'login-h' }, 'Sign in to ivtd'), info, error, user.wrap, pass.wrap, submit);

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.hidden = true;
    const username = user.control.value.trim();
    const password = pass.control.value;
    if (!username || !password) {
      error.textContent = 'Enter your username and password.';
      error.hidden = false;
      (username ? pass : user).control.focus();
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    try {
      await session.login(username, password);
      onSignedIn();
    } catch (err) {
      error.textContent = (err as Error).message;
      error.hidden = false;
      info.hidden = true;
      pass.control.select();
      pass.control.focus();
    } finally {
      submit.disabled = false;
      submit.textContent = 'Sign in';
    }
  });
  queueMicrotask(() => user.control.focus());
  return h('main', { id: 'main', class: 'login-screen' }, h('div', { class: 'brand big', 'aria-hidden': 'true' }, 'ivtd'), form, h('p', { class: 'hint center' }, 'First start prints the admin credentials in the server\'s terminal. Lost them? On the server: ivtd user passwd --username admin --password-stdin.'));
}
