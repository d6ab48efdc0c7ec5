import { agentErrorMessage } from './agent-refusal';

describe('agentErrorMessage', () => {
  it('passes on the message of a JSON error body', () => {
    expect(
      agentErrorMessage(
        '{"statusCode":422,"error":"Unprocessable Entity","message":"ram_mb: 1048576 MB does not fit"}',
      ),
    ).toBe('ram_mb: 1048576 MB does not fit');
  });

  it('strips control characters and bidirectional overrides', () => {
    expect(
      agentErrorMessage({ message: 'no\u0000 space\r\n in \u001b[31m/var\u202e/lib\u0085' }),
    ).toBe('no space in [31m/var/lib');
  });

  it('shortens a long message to 200 characters', () => {
    const message = agentErrorMessage(JSON.stringify({ message: 'x'.repeat(5000) }))!;
    expect(Array.from(message)).toHaveLength(200);
    expect(message.endsWith('…')).toBe(true);
  });

  it('passes on nothing of a body that is not a JSON error', () => {
    for (const body of [
      '<html>internal error</html>',
      '{"error":"no message"}',
      '{"message":42}',
      '["message"]',
      '{"message":"\\u0000\\u0001"}',
      undefined,
      '',
    ]) {
      expect(agentErrorMessage(body)).toBeUndefined();
    }
  });
});
