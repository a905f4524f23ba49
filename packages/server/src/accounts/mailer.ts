import type { Transporter } from 'nodemailer';

/** A message the portal mails: plain text only, so nothing in it is ever rendered as HTML. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** Extra headers of our own making (List-Unsubscribe); each value kept to one line. */
  headers?: Record<string, string>;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/** Mail headers come from our own text and Platform names: line breaks would add headers, so none pass. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
const oneLine = (s: string) => s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();

/**
 * Invitation and password-reset mail through the SMTP server of `PAYHOOKS_SMTP_URL`, by
 * nodemailer (smtps:// for TLS from the first byte; smtp:// upgrades with STARTTLS when the
 * server offers it). A failure to send is reported to the caller, which still shows the link.
 */
export function smtpMailer(url: string, from: string): Mailer {
  // nodemailer is loaded on the first mail: most processes (and every admin command that mails
  // nothing) never send one.
  let transport: Promise<Transporter> | undefined;
  const open = () => (transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(url, { from })));
  return {
    async send(mail) {
      const headers = mail.headers ? Object.fromEntries(Object.entries(mail.headers).map(([k, v]) => [k, oneLine(v)])) : undefined;
      await (await open()).sendMail({
        to: oneLine(mail.to),
        subject: oneLine(mail.subject),
        text: mail.text,
        ...(headers ? { headers } : {}),
      });
    },
    close() {
      // A transport that never opened (nodemailer refused the URL) has nothing to close.
      transport?.then((t) => t.close()).catch(() => {});
    },
  };
}
