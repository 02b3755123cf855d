import GoogleKeys
import Testing

/// The one parser of a key's name at the API Keys service.
@Suite struct GoogleKeyResourceTests {
    @Test func theSixPartNameIsParsed() throws {
        let resource = try #require(GoogleKeyResource("projects/764086051850/locations/global/keys/gemvault-default-20261202050000"))
        #expect(resource.project == "764086051850" && resource.location == "global" && resource.keyId == "gemvault-default-20261202050000")
        #expect(resource.name == "projects/764086051850/locations/global/keys/gemvault-default-20261202050000")
        #expect(GoogleKeyResource("projects/demo-project/locations/global/keys/b7ff1f9f-8275-410a-94dd-3855ee9b5dd2")?.project == "demo-project")
    }

    @Test func anythingElseIsNoKeyName() {
        for name in ["", "projects/1", "projects/1/keys/x", "projects/1/locations/global/keys", "projects/1/locations/global/keys/",
                     "projects//locations/global/keys/x", "projects/1/locations//keys/x", "projects/1/locations/global/keys/x/y",
                     "project/1/locations/global/keys/x", "projects/1/location/global/keys/x", "projects/1/locations/global/key/x",
                     "/projects/1/locations/global/keys/x", "operations/akmf.p7-1-2"] {
            #expect(GoogleKeyResource(name) == nil, "\(name)")
        }
    }

    @Test func aNameIsMadeInTheGlobalLocation() {
        #expect(GoogleKeyResource(project: "p", keyId: "k").name == "projects/p/locations/global/keys/k")
        #expect(GoogleKeyResource.collection(project: "p") == "projects/p/locations/global/keys")
        #expect(GoogleKeyResource(GoogleKeyResource(project: "p", keyId: "k").name) == GoogleKeyResource(project: "p", keyId: "k"))
    }
}

/// The one parser of a Secret Manager version's name.
@Suite struct SecretVersionNameTests {
    @Test func aVersionsNameIsRead() throws {
        let name = try #require(SecretVersionName("projects/764086051850/secrets/gemini-key/versions/8"))
        #expect(name.project == "764086051850" && name.secret == "gemini-key" && name.version == 8 && name.namesProjectNumber)
        #expect(name.name == "projects/764086051850/secrets/gemini-key/versions/8")
        #expect(SecretVersionName("projects/lab/secrets/gemini-key/versions/1")?.namesProjectNumber == false)
    }

    @Test(arguments: [
        "", "projects/lab/secrets/gemini-key", "projects/lab/secrets/gemini-key/versions/1/extra",
        "project/lab/secrets/gemini-key/versions/1", "projects//secrets/gemini-key/versions/1",
        "projects/lab/secret/gemini-key/versions/1", "projects/lab/secrets//versions/1",
        "projects/lab/secrets/gemini-key/version/1", "projects/lab/secrets/gemini-key/versions/",
        "projects/lab/secrets/gemini-key/versions/0", "projects/lab/secrets/gemini-key/versions/007",
        "projects/lab/secrets/gemini-key/versions/latest", "projects/lab/secrets/gemini-key/versions/-1",
        "projects/lab/secrets/gemini-key/versions/+1", "projects/lab/secrets/gemini-key/versions/99999999999999999999",
    ])
    func anythingElseIsNoVersionName(text: String) {
        #expect(SecretVersionName(text) == nil)
    }
}
