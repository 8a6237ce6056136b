// RFC 9605 Appendix C test vectors, as published (sframe-wg/sframe test-vectors/test-vectors.json at
// f6868b8, the RFC's final text, July 2024). All byte strings are hex; AAD and metadata are
// "IETF SFrame WG", the plaintext is "draft-ietf-sframe-enc".

enum SFrameVectors {
    /// C.1: the KID and CTR values each header vector combines (every KID with every CTR).
    static let values: [UInt64] = [
        0x0, 0x1, 0xff, 0x100,
        0xffff, 0x10000, 0xffffff, 0x1000000,
        0xffffffff, 0x100000000, 0xffffffffff, 0x10000000000,
        0xffffffffffff, 0x1000000000000, 0xffffffffffffff, 0x100000000000000,
        0xffffffffffffffff,
    ]

    /// C.1: `headers[i][j]` is the encoded header for KID `values[i]` and CTR `values[j]`.
    static let headers: [[String]] = [
        // KID 0x0
        [
            "00", "01", "08ff", "090100", "09ffff", "0a010000", "0affffff", "0b01000000", "0bffffffff",
            "0c0100000000", "0cffffffffff", "0d010000000000", "0dffffffffffff", "0e01000000000000",
            "0effffffffffffff", "0f0100000000000000", "0fffffffffffffffff",
        ],
        // KID 0x1
        [
            "10", "11", "18ff", "190100", "19ffff", "1a010000", "1affffff", "1b01000000", "1bffffffff",
            "1c0100000000", "1cffffffffff", "1d010000000000", "1dffffffffffff", "1e01000000000000",
            "1effffffffffffff", "1f0100000000000000", "1fffffffffffffffff",
        ],
        // KID 0xff
        [
            "80ff", "81ff", "88ffff", "89ff0100", "89ffffff", "8aff010000", "8affffffff", "8bff01000000",
            "8bffffffffff", "8cff0100000000", "8cffffffffffff", "8dff010000000000", "8dffffffffffffff",
            "8eff01000000000000", "8effffffffffffffff", "8fff0100000000000000", "8fffffffffffffffffff",
        ],
        // KID 0x100
        [
            "900100", "910100", "980100ff", "9901000100", "990100ffff", "9a0100010000", "9a0100ffffff",
            "9b010001000000", "9b0100ffffffff", "9c01000100000000", "9c0100ffffffffff", "9d0100010000000000",
            "9d0100ffffffffffff", "9e010001000000000000", "9e0100ffffffffffffff", "9f01000100000000000000",
            "9f0100ffffffffffffffff",
        ],
        // KID 0xffff
        [
            "90ffff", "91ffff", "98ffffff", "99ffff0100", "99ffffffff", "9affff010000", "9affffffffff",
            "9bffff01000000", "9bffffffffffff", "9cffff0100000000", "9cffffffffffffff", "9dffff010000000000",
            "9dffffffffffffffff", "9effff01000000000000", "9effffffffffffffffff", "9fffff0100000000000000",
            "9fffffffffffffffffffff",
        ],
        // KID 0x10000
        [
            "a0010000", "a1010000", "a8010000ff", "a90100000100", "a9010000ffff", "aa010000010000", "aa010000ffffff",
            "ab01000001000000", "ab010000ffffffff", "ac0100000100000000", "ac010000ffffffffff",
            "ad010000010000000000", "ad010000ffffffffffff", "ae01000001000000000000", "ae010000ffffffffffffff",
            "af0100000100000000000000", "af010000ffffffffffffffff",
        ],
        // KID 0xffffff
        [
            "a0ffffff", "a1ffffff", "a8ffffffff", "a9ffffff0100", "a9ffffffffff", "aaffffff010000", "aaffffffffffff",
            "abffffff01000000", "abffffffffffffff", "acffffff0100000000", "acffffffffffffffff",
            "adffffff010000000000", "adffffffffffffffffff", "aeffffff01000000000000", "aeffffffffffffffffffff",
            "afffffff0100000000000000", "afffffffffffffffffffffff",
        ],
        // KID 0x1000000
        [
            "b001000000", "b101000000", "b801000000ff", "b9010000000100", "b901000000ffff", "ba01000000010000",
            "ba01000000ffffff", "bb0100000001000000", "bb01000000ffffffff", "bc010000000100000000",
            "bc01000000ffffffffff", "bd01000000010000000000", "bd01000000ffffffffffff", "be0100000001000000000000",
            "be01000000ffffffffffffff", "bf010000000100000000000000", "bf01000000ffffffffffffffff",
        ],
        // KID 0xffffffff
        [
            "b0ffffffff", "b1ffffffff", "b8ffffffffff", "b9ffffffff0100", "b9ffffffffffff", "baffffffff010000",
            "baffffffffffffff", "bbffffffff01000000", "bbffffffffffffffff", "bcffffffff0100000000",
            "bcffffffffffffffffff", "bdffffffff010000000000", "bdffffffffffffffffffff", "beffffffff01000000000000",
            "beffffffffffffffffffffff", "bfffffffff0100000000000000", "bfffffffffffffffffffffffff",
        ],
        // KID 0x100000000
        [
            "c00100000000", "c10100000000", "c80100000000ff", "c901000000000100", "c90100000000ffff",
            "ca0100000000010000", "ca0100000000ffffff", "cb010000000001000000", "cb0100000000ffffffff",
            "cc01000000000100000000", "cc0100000000ffffffffff", "cd0100000000010000000000",
            "cd0100000000ffffffffffff", "ce010000000001000000000000", "ce0100000000ffffffffffffff",
            "cf01000000000100000000000000", "cf0100000000ffffffffffffffff",
        ],
        // KID 0xffffffffff
        [
            "c0ffffffffff", "c1ffffffffff", "c8ffffffffffff", "c9ffffffffff0100", "c9ffffffffffffff",
            "caffffffffff010000", "caffffffffffffffff", "cbffffffffff01000000", "cbffffffffffffffffff",
            "ccffffffffff0100000000", "ccffffffffffffffffffff", "cdffffffffff010000000000",
            "cdffffffffffffffffffffff", "ceffffffffff01000000000000", "ceffffffffffffffffffffffff",
            "cfffffffffff0100000000000000", "cfffffffffffffffffffffffffff",
        ],
        // KID 0x10000000000
        [
            "d0010000000000", "d1010000000000", "d8010000000000ff", "d90100000000000100", "d9010000000000ffff",
            "da010000000000010000", "da010000000000ffffff", "db01000000000001000000", "db010000000000ffffffff",
            "dc0100000000000100000000", "dc010000000000ffffffffff", "dd010000000000010000000000",
            "dd010000000000ffffffffffff", "de01000000000001000000000000", "de010000000000ffffffffffffff",
            "df0100000000000100000000000000", "df010000000000ffffffffffffffff",
        ],
        // KID 0xffffffffffff
        [
            "d0ffffffffffff", "d1ffffffffffff", "d8ffffffffffffff", "d9ffffffffffff0100", "d9ffffffffffffffff",
            "daffffffffffff010000", "daffffffffffffffffff", "dbffffffffffff01000000", "dbffffffffffffffffffff",
            "dcffffffffffff0100000000", "dcffffffffffffffffffffff", "ddffffffffffff010000000000",
            "ddffffffffffffffffffffffff", "deffffffffffff01000000000000", "deffffffffffffffffffffffffff",
            "dfffffffffffff0100000000000000", "dfffffffffffffffffffffffffffff",
        ],
        // KID 0x1000000000000
        [
            "e001000000000000", "e101000000000000", "e801000000000000ff", "e9010000000000000100",
            "e901000000000000ffff", "ea01000000000000010000", "ea01000000000000ffffff", "eb0100000000000001000000",
            "eb01000000000000ffffffff", "ec010000000000000100000000", "ec01000000000000ffffffffff",
            "ed01000000000000010000000000", "ed01000000000000ffffffffffff", "ee0100000000000001000000000000",
            "ee01000000000000ffffffffffffff", "ef010000000000000100000000000000", "ef01000000000000ffffffffffffffff",
        ],
        // KID 0xffffffffffffff
        [
            "e0ffffffffffffff", "e1ffffffffffffff", "e8ffffffffffffffff", "e9ffffffffffffff0100",
            "e9ffffffffffffffffff", "eaffffffffffffff010000", "eaffffffffffffffffffff", "ebffffffffffffff01000000",
            "ebffffffffffffffffffffff", "ecffffffffffffff0100000000", "ecffffffffffffffffffffffff",
            "edffffffffffffff010000000000", "edffffffffffffffffffffffffff", "eeffffffffffffff01000000000000",
            "eeffffffffffffffffffffffffffff", "efffffffffffffff0100000000000000", "efffffffffffffffffffffffffffffff",
        ],
        // KID 0x100000000000000
        [
            "f00100000000000000", "f10100000000000000", "f80100000000000000ff", "f901000000000000000100",
            "f90100000000000000ffff", "fa0100000000000000010000", "fa0100000000000000ffffff",
            "fb010000000000000001000000", "fb0100000000000000ffffffff", "fc01000000000000000100000000",
            "fc0100000000000000ffffffffff", "fd0100000000000000010000000000", "fd0100000000000000ffffffffffff",
            "fe010000000000000001000000000000", "fe0100000000000000ffffffffffffff",
            "ff01000000000000000100000000000000", "ff0100000000000000ffffffffffffffff",
        ],
        // KID 0xffffffffffffffff
        [
            "f0ffffffffffffffff", "f1ffffffffffffffff", "f8ffffffffffffffffff", "f9ffffffffffffffff0100",
            "f9ffffffffffffffffffff", "faffffffffffffffff010000", "faffffffffffffffffffffff",
            "fbffffffffffffffff01000000", "fbffffffffffffffffffffffff", "fcffffffffffffffff0100000000",
            "fcffffffffffffffffffffffffff", "fdffffffffffffffff010000000000", "fdffffffffffffffffffffffffffff",
            "feffffffffffffffff01000000000000", "feffffffffffffffffffffffffffffff",
            "ffffffffffffffffff0100000000000000", "ffffffffffffffffffffffffffffffffff",
        ],
    ]

    /// C.2: AES-CTR + HMAC AEAD (suites 1-3), with their subkeys.
    struct CtrHmac { let suite: UInt16, key, encKey, authKey, nonce, aad, pt, ct: String }
    static let ctrHmac: [CtrHmac] = [
        CtrHmac(suite: 1, key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f",
                encKey: "000102030405060708090a0b0c0d0e0f", authKey: "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f",
                nonce: "101112131415161718191a1b", aad: "4945544620534672616d65205747", pt: "64726166742d696574662d736672616d652d656e63",
                ct: "6339af04ada1d064688a442b8dc69d5b6bfa40f4bef0583e8081069cc60705"),
        CtrHmac(suite: 2, key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f",
                encKey: "000102030405060708090a0b0c0d0e0f", authKey: "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f",
                nonce: "101112131415161718191a1b", aad: "4945544620534672616d65205747", pt: "64726166742d696574662d736672616d652d656e63",
                ct: "6339af04ada1d064688a442b8dc69d5b6bfa40f4be6e93b7da076927bb"),
        CtrHmac(suite: 3, key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f",
                encKey: "000102030405060708090a0b0c0d0e0f", authKey: "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f",
                nonce: "101112131415161718191a1b", aad: "4945544620534672616d65205747", pt: "64726166742d696574662d736672616d652d656e63",
                ct: "6339af04ada1d064688a442b8dc69d5b6bfa40f4be09480509"),
    ]

    /// C.3: SFrame encryption for every suite, with the key schedule's intermediate values.
    struct Frame {
        let suite: UInt16, kid, ctr: UInt64
        let baseKey, keyLabel, saltLabel, secret, key, salt, metadata, nonce, aad, pt, ct: String
    }
    static let frames: [Frame] = [
        Frame(suite: 1, kid: 0x123, ctr: 0x4567, baseKey: "000102030405060708090a0b0c0d0e0f",
              keyLabel: "534672616d6520312e3020536563726574206b65792000000000000001230001",
              saltLabel: "534672616d6520312e30205365637265742073616c742000000000000001230001",
              secret: "d926952ca8b7ec4a95941d1ada3a5203ceff8cceee34f574d23909eb314c40c0",
              key: "3f7d9a7c83ae8e1c8a11ae695ab59314b367e359fadac7b9c46b2bc6f81f46e16b96f0811868d59402b7e870102720b3",
              salt: "50b29329a04dc0f184ac3168", metadata: "4945544620534672616d65205747",
              nonce: "50b29329a04dc0f184ac740f", aad: "99012345674945544620534672616d65205747",
              pt: "64726166742d696574662d736672616d652d656e63",
              ct: "9901234567449408b6f490086165b9d6f62b24ae1a59a56486b4ae8ed036b88912e24f11"),
        Frame(suite: 2, kid: 0x123, ctr: 0x4567, baseKey: "000102030405060708090a0b0c0d0e0f",
              keyLabel: "534672616d6520312e3020536563726574206b65792000000000000001230002",
              saltLabel: "534672616d6520312e30205365637265742073616c742000000000000001230002",
              secret: "d926952ca8b7ec4a95941d1ada3a5203ceff8cceee34f574d23909eb314c40c0",
              key: "e2ec5c797540310483b16bf6e7a570d2a27d192fe869c7ccd8584a8d9dab91549fbe553f5113461ec6aa83bf3865553e",
              salt: "e68ac8dd3d02fbcd368c5577", metadata: "4945544620534672616d65205747",
              nonce: "e68ac8dd3d02fbcd368c1010", aad: "99012345674945544620534672616d65205747",
              pt: "64726166742d696574662d736672616d652d656e63",
              ct: "99012345673f31438db4d09434e43afa0f8a2f00867a2be085046a9f5cb4f101d607"),
        Frame(suite: 3, kid: 0x123, ctr: 0x4567, baseKey: "000102030405060708090a0b0c0d0e0f",
              keyLabel: "534672616d6520312e3020536563726574206b65792000000000000001230003",
              saltLabel: "534672616d6520312e30205365637265742073616c742000000000000001230003",
              secret: "d926952ca8b7ec4a95941d1ada3a5203ceff8cceee34f574d23909eb314c40c0",
              key: "2c5703089cbb8c583475e4fc461d97d18809df79b6d550f78eb6d50ffa80d89211d57909934f46f5405e38cd583c69fe",
              salt: "38c16e4f5159700c00c7f350", metadata: "4945544620534672616d65205747",
              nonce: "38c16e4f5159700c00c7b637", aad: "99012345674945544620534672616d65205747",
              pt: "64726166742d696574662d736672616d652d656e63",
              ct: "990123456717fc8af28a5a695afcfc6c8df6358a17e26b2fcb3bae32e443"),
        Frame(suite: 4, kid: 0x123, ctr: 0x4567, baseKey: "000102030405060708090a0b0c0d0e0f",
              keyLabel: "534672616d6520312e3020536563726574206b65792000000000000001230004",
              saltLabel: "534672616d6520312e30205365637265742073616c742000000000000001230004",
              secret: "d926952ca8b7ec4a95941d1ada3a5203ceff8cceee34f574d23909eb314c40c0",
              key: "d34f547f4ca4f9a7447006fe7fcbf768",
              salt: "75234edefe07819026751816", metadata: "4945544620534672616d65205747",
              nonce: "75234edefe07819026755d71", aad: "99012345674945544620534672616d65205747",
              pt: "64726166742d696574662d736672616d652d656e63",
              ct: "9901234567b7412c2513a1b66dbb48841bbaf17f598751176ad847681a69c6d0b091c07018ce4adb34eb"),
        Frame(suite: 5, kid: 0x123, ctr: 0x4567, baseKey: "000102030405060708090a0b0c0d0e0f",
              keyLabel: "534672616d6520312e3020536563726574206b65792000000000000001230005",
              saltLabel: "534672616d6520312e30205365637265742073616c742000000000000001230005",
              secret: "0fc3ea6de6aac97a35f194cf9bed94d4b5230f1cb45a785c9fe5dce9c188938ab6ba005bc4c0a19181599e9d1bcf7b74aca48b60bf5e254e546d809313e083a3",
              key: "d3e27b0d4a5ae9e55df01a70e6d4d28d969b246e2936f4b7a5d9b494da6b9633",
              salt: "84991c167b8cd23c93708ec7", metadata: "4945544620534672616d65205747",
              nonce: "84991c167b8cd23c9370cba0", aad: "99012345674945544620534672616d65205747",
              pt: "64726166742d696574662d736672616d652d656e63",
              ct: "990123456794f509d36e9beacb0e261d99c7d1e972f1fed787d4049f17ca21353c1cc24d56ceabced279"),
    ]
}
