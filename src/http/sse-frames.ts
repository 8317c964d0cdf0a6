// Reading an event stream (text/event-stream) as src/http/sse.ts writes it: for the clients
// inside this project (`petstore listen`, the MCP streamEvents tool). The WHATWG format, reduced
// to the fields the server sends: id, data (one line) and comments.

/** One frame: its id and data (an event), or a comment (`: after N`, a heartbeat, why it ended). */
export interface SseFrame {
  id?: string;
  data?: string;
  comment?: string;
}

/** A parser for one stream: give it each chunk as it arrives, it returns the frames that chunk completed. */
export function sseParser(): (chunk: Uint8Array) => SseFrame[] {
  const decoder = new TextDecoder();
  let buffer = '';
  return (chunk) => {
    buffer += decoder.decode(chunk, { stream: true });
    const frames: SseFrame[] = [];
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      frames.push(frameOf(buffer.slice(0, end)));
      buffer = buffer.slice(end + 2);
    }
    return frames;
  };
}

function frameOf(text: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === '') frame.comment = value;
    else if (field === 'id' || field === 'data') frame[field] = value;
  }
  return frame;
}
