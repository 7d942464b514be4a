import { cutMarkerLine, StreamCapture } from '../../adapters/executor/capped-log';

describe('StreamCapture', () => {
  it('keeps a stream that fits the cap whole', () => {
    const capture = new StreamCapture(100);

    capture.write(Buffer.from('hello '));
    capture.write(Buffer.from('world'));

    expect(capture.toCappedLog()).toEqual({ text: 'hello world', totalBytes: 11, truncated: false });
  });

  it('keeps head and tail of a long stream and marks how many bytes were cut', () => {
    const capture = new StreamCapture(10);

    for (const part of ['HEAD-', 'aaaaaaaaaa', 'bbbbbbbbbb', '-TAIL']) capture.write(Buffer.from(part));

    const log = capture.toCappedLog();
    expect(log).toEqual({ text: `HEAD-${cutMarkerLine(20)}-TAIL`, totalBytes: 30, truncated: true });
  });

  it('sees a marker split across two chunks', () => {
    const capture = new StreamCapture(1000);

    capture.write(Buffer.from('... Trace'));
    capture.write(Buffer.from('back (most recent call last)'));

    expect(capture.markersSeen()).toEqual(['Traceback']);
  });

  it('sees a marker split over three chunks, one shorter than the marker', () => {
    const capture = new StreamCapture(1000);

    for (const part of ['Value', 'Er', 'ror: bad']) capture.write(Buffer.from(part));

    expect(capture.markersSeen()).toEqual(['Error:']);
  });

  it('sees markers only in the cut middle, and is case-sensitive', () => {
    const capture = new StreamCapture(8);

    capture.write(Buffer.from('x'.repeat(100)));
    capture.write(Buffer.from('test failed; FAILED; exception: no'));
    capture.write(Buffer.from('y'.repeat(100)));

    expect(capture.toCappedLog().text).not.toContain('failed');
    expect(capture.markersSeen()).toEqual(['failed']);
  });

  it('never cuts inside a UTF-8 character', () => {
    const capture = new StreamCapture(6);

    capture.write(Buffer.from('ab€€€€€€cd€'));

    const { text } = capture.toCappedLog();
    expect(text).not.toContain('\uFFFD');
    expect(text.startsWith('ab')).toBe(true);
    expect(text.endsWith('€')).toBe(true);
  });
});
