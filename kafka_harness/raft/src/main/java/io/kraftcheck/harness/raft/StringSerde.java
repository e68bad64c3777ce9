package io.kraftcheck.harness.raft;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.Writable;
import org.apache.kafka.server.common.serialization.RecordSerde;

/** Client records are the spec's model values (v1, v2, ...) as UTF-8 strings. */
final class StringSerde implements RecordSerde<String> {
    @Override
    public int recordSize(String data, ObjectSerializationCache cache) {
        return data.getBytes(StandardCharsets.UTF_8).length;
    }

    @Override
    public void write(String data, ObjectSerializationCache cache, Writable out) {
        out.writeByteArray(data.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String read(Readable input, int size) {
        byte[] b = new byte[size];
        for (int i = 0; i < size; i++) {
            b[i] = input.readByte();
        }
        return new String(b, StandardCharsets.UTF_8);
    }
}
