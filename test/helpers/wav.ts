/** The canonical 44-byte RIFF/WAVE header (one `fmt ` chunk of 16 bytes, then `data`). */

export interface WavHeaderSpec {
  /** 'pcm': WAVE_FORMAT_PCM (integer samples); 'float': WAVE_FORMAT_IEEE_FLOAT */
  format: 'pcm' | 'float';
  channels: number;
  /** frames per second */
  rate: number;
  bitsPerSample: number;
  /** length of the sample data that follows the header */
  dataBytes: number;
}

const FORMAT_TAG: Record<WavHeaderSpec['format'], number> = { pcm: 1, float: 3 };

export function wavHeader({ format, channels, rate, bitsPerSample, dataBytes }: WavHeaderSpec): Buffer {
  const blockAlign = channels * Math.ceil(bitsPerSample / 8);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(FORMAT_TAG[format], 20);
  header.writeUInt16LE(channels, 22);
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(rate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(bitsPerSample, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}
